package grpclimit_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// The plans declared to the interceptor are checked when it is built,
// against its rates (a method's included) and caps, as the HTTP
// middleware's are: a misspelt name and limits given the wrong way round
// are errors naming the plan, the policy and the problem.
func TestDeclaredPlansChecked(t *testing.T) {
	at := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	api, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMonthIn(10_000, time.UTC), limiter.PerMinute(600)), at)
	search, _ := newLimiter(t, limiter.MustPolicy("search", limiter.PerMinute(60)), at)
	exports, err := limiter.NewInFlight("exports", 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exports.Close() })
	lookup := func(context.Context, string) (*limiter.Plan, string, error) { return nil, "", nil }
	for _, tt := range []struct {
		name string
		plan *limiter.Plan
		want string // "" for a plan that applies
	}{
		{"fits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {20_000, 1_000}, "search": {120}}, Caps: map[string]int64{"exports": 4}}, ""},
		{"misspelt_policy", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"serch": {120}}}, `plan "pro": limits for policy "serch", which no rate here has`},
		{"misspelt_cap", &limiter.Plan{Name: "pro", Caps: map[string]int64{"export": 4}}, `plan "pro": a maximum for in-flight cap "export"`},
		{"swapped_limits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {600, 10_000}}}, `rate 600/month@UTC allows fewer than rate 10000/1m0s`},
		{"too_many_limits", &limiter.Plan{Name: "pro", Limits: map[string][]int64{"search": {120, 10}}}, `plan "pro": policy "search" has 1 rates`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := grpclimit.New(api, grpclimit.WithMethods(map[string]middleware.Limiter{"/search.Search/Find": search}),
				grpclimit.WithInFlight(exports, nil), grpclimit.WithPlans(lookup), grpclimit.WithDeclaredPlans(tt.plan))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("got %v, want the plan accepted", err)
			case tt.want != "" && (!errors.Is(err, grpclimit.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want ErrInvalidOption saying %q", err, tt.want)
			}
		})
	}
	if _, err := grpclimit.New(api, grpclimit.WithDeclaredPlans(&limiter.Plan{Name: "pro"})); !errors.Is(err, grpclimit.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "needs WithPlans") {
		t.Errorf("plans declared with no lookup: got %v, want ErrInvalidOption saying it needs WithPlans", err)
	}
}
