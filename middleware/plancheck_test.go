package middleware_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// planCheckRows are plans declared to a door of the rate "api" (10,000
// a month, 600 a minute) and the cap "exports", and what its
// constructor says of each: "" for a plan that applies.
var planCheckRows = []struct {
	name string
	plan *limiter.Plan
	want string
}{
	{"fits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {20_000, 1_000}}, Caps: map[string]int64{"exports": 4}}, ""},
	{"misspelt_policy", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"apl": {20_000, 1_000}}}, `plan "pro": limits for policy "apl", which no rate here has`},
	{"misspelt_cap", &limiter.Plan{Name: "pro", Caps: map[string]int64{"export": 4}}, `plan "pro": a maximum for in-flight cap "export", which no cap here has`},
	{"swapped_limits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {600, 10_000}}}, `plan "pro": limiter: invalid policy: policy "api": rate 600/month@UTC allows fewer than rate 10000/1m0s`},
	{"too_few_limits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {600}}}, `plan "pro": policy "api" has 2 rates`},
	{"limit_out_of_range", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {10_000, 0}}}, `plan "pro"`},
	{"cap_out_of_range", &limiter.Plan{Name: "pro", Caps: map[string]int64{"exports": 0}}, `plan "pro": in-flight cap "exports": max 0`},
	{"nil_plan", nil, "plan 0 is nil"},
}

// newPlanDoorLimits returns the door's rate and cap.
func newPlanDoorLimits(t *testing.T) (*limiter.Limiter, *limiter.InFlight) {
	t.Helper()
	rate := newLimiter(t, newFakeClock(t0), "api", limiter.PerMonthIn(10_000, time.UTC), limiter.PerMinute(600))
	capped, err := limiter.NewInFlight("exports", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { capped.Close() })
	return rate, capped
}

// The plans declared to the middleware are checked when it is built: a
// misspelt name, limits given the wrong way round, another count, a
// limit or a maximum out of range are errors naming the plan, the
// policy and the problem.
func TestDeclaredPlansChecked(t *testing.T) {
	rate, capped := newPlanDoorLimits(t)
	lookup := func(*http.Request) (*limiter.Plan, string, error) { return nil, "", nil }
	for _, tt := range planCheckRows {
		t.Run(tt.name, func(t *testing.T) {
			_, err := middleware.New(rate, middleware.WithInFlight(capped, nil),
				middleware.WithPlans(lookup), middleware.WithDeclaredPlans(tt.plan))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want the plan accepted", err)
			case tt.want != "" && (!errors.Is(err, middleware.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want ErrInvalidOption saying %q", err, tt.want)
			}
		})
	}
	if _, err := middleware.New(rate, middleware.WithDeclaredPlans(planCheckRows[0].plan)); !errors.Is(err, middleware.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "needs WithPlans") {
		t.Errorf("plans declared with no lookup: got %v, want ErrInvalidOption saying it needs WithPlans", err)
	}
	if _, err := middleware.New(rate, middleware.WithPlans(lookup), middleware.WithDeclaredPlans()); !errors.Is(err, middleware.ErrInvalidOption) {
		t.Errorf("no plan declared: got %v, want ErrInvalidOption", err)
	}
}
