package verdict

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A plan's limits must not contradict their windows: a window always
// longer than another given a lower limit is refused, naming both;
// windows whose lengths overlap (a day and 24 hours, a month and 30
// days) are not ordered.
func TestCheckPlanOrder(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name   string
		rates  []limiter.Rate
		limits []int64
		want   string // "" to pass
	}{
		{"month_over_minute", []limiter.Rate{limiter.PerMonthIn(10_000, paris), limiter.PerMinute(600)}, []int64{10_000, 600}, ""},
		{"month_under_minute", []limiter.Rate{limiter.PerMonthIn(10_000, paris), limiter.PerMinute(600)}, []int64{600, 10_000}, "rate 600/month@Europe/Paris allows fewer than rate 10000/1m0s"},
		{"short_first_swapped", []limiter.Rate{limiter.PerSecond(5), limiter.PerMinute(100)}, []int64{100, 5}, "rate 5/1m0s allows fewer than rate 100/1s"},
		{"equal_limits", []limiter.Rate{limiter.PerSecond(5), limiter.PerMinute(100)}, []int64{5, 5}, ""},
		{"day_under_hour", []limiter.Rate{limiter.PerDayIn(100, paris), limiter.PerHour(10)}, []int64{10, 100}, "rate 10/day@Europe/Paris allows fewer than rate 100/1h0m0s"},
		{"day_and_24h_unordered", []limiter.Rate{limiter.PerDayIn(100, paris), {Limit: 10, Window: 24 * time.Hour}}, []int64{10, 100}, ""},
		{"month_and_30_days_unordered", []limiter.Rate{limiter.PerMonthIn(100, paris), {Limit: 10, Window: 30 * 24 * time.Hour}}, []int64{10, 100}, ""},
		{"month_under_week", []limiter.Rate{limiter.PerMonthIn(100, paris), limiter.PerWeekIn(10, paris)}, []int64{10, 100}, "allows fewer than rate 100/week@Europe/Paris"},
		{"week_under_25h", []limiter.Rate{limiter.PerWeekIn(100, paris), {Limit: 10, Window: 25 * time.Hour}}, []int64{10, 100}, "rate 10/week@Europe/Paris allows fewer"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := limiter.MustPolicy("api", tt.rates...)
			err := CheckPlan(&limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": tt.limits}}, p)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("limits %v: got %v, want them accepted", tt.limits, err)
			case tt.want != "" && (!errors.Is(err, limiter.ErrInvalidPolicy) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), `plan "pro"`)):
				t.Fatalf("limits %v: got %v, want ErrInvalidPolicy naming the plan and saying %q", tt.limits, err, tt.want)
			}
		})
	}
}
