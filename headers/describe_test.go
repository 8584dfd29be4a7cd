package headers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestDescribeLimit: a calendar window is per its period whatever its
// length, a fixed window per its length in its largest whole unit, and
// the deciding window of a layered policy is the one described; a
// decision with no window to describe gives "". Each row's text is the
// one the problem body's detail carries.
func TestDescribeLimit(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	for _, tt := range []struct {
		name string
		p    *limiter.Policy
		at   time.Time
		n    int // calls; the last is described
		want string
	}{
		{"minute", limiter.MustPolicy("api", limiter.PerMinute(100)), noon30, 101, "100 per 1m"},
		{"second", limiter.MustPolicy("api", limiter.PerSecond(5)), noon30, 6, "5 per 1s"},
		{"ninety_seconds", limiter.MustPolicy("api", limiter.Rate{Limit: 10, Window: 90 * time.Second}), noon30, 11, "10 per 90s"},
		{"half_second", limiter.MustPolicy("api", limiter.Rate{Limit: 3, Window: 500 * time.Millisecond}), noon30, 4, "3 per 500ms"},
		{"fixed_day", limiter.MustPolicy("api", limiter.Rate{Limit: 30, Window: 24 * time.Hour}), noon30, 31, "30 per 1d"},
		{"day_of_23_hours", limiter.MustPolicy("plan", limiter.PerDayIn(3, paris)), time.Date(2026, 3, 29, 20, 0, 0, 0, paris), 4, "3 per day"},
		{"week", limiter.MustPolicy("plan", limiter.PerWeekIn(3, time.UTC)), noon30, 4, "3 per week"},
		{"february", limiter.MustPolicy("plan", limiter.PerMonthIn(1000, time.UTC)), time.Date(2026, 2, 10, 0, 0, 0, 0, time.UTC), 1001, "1000 per month"},
		{"thirty_one_days", limiter.MustPolicy("plan", limiter.PerMonthIn(3, paris)), time.Date(2026, 1, 31, 12, 0, 0, 0, paris), 4, "3 per month"},
		{"month_decides_a_layered_policy", limiter.MustPolicy("plan", limiter.PerMonthIn(3, paris), limiter.PerMinute(600)), time.Date(2026, 7, 10, 12, 0, 0, 0, paris), 4, "3 per month"},
		{"minute_decides_a_layered_policy", limiter.MustPolicy("plan", limiter.PerMonthIn(1000, paris), limiter.PerMinute(2)), time.Date(2026, 7, 10, 12, 0, 0, 0, paris), 3, "2 per 1m"},
		{"admission_closest_to_exhaustion", limiter.MustPolicy("plan", limiter.PerDayIn(5, paris), limiter.PerMinute(600)), time.Date(2026, 7, 10, 12, 0, 0, 0, paris), 2, "5 per day"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, tt.p, tt.at)
			d := allow(t, l, tt.n)
			if got := refusal.Limit(&d); got != tt.want {
				t.Fatalf("refusal.Limit(%s after %d calls at %v) = %q, want %q", tt.p.Name(), tt.n, tt.at, got, tt.want)
			}
			if d.Allowed {
				return
			}
			rec := httptest.NewRecorder()
			newWriter(t, WithProblemJSON("", "")).WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
			if want := `"detail":"rate limit of ` + tt.want + ` exceeded;`; !strings.Contains(rec.Body.String(), want) {
				t.Fatalf("problem body %s, want it to hold %s", rec.Body.String(), want)
			}
		})
	}
}

// TestDescribeLimitNothingToDescribe: nil, a cap's refusal and a custom
// limiter's decision without a window give "".
func TestDescribeLimitNothingToDescribe(t *testing.T) {
	_, caps := capDecisions(t, 5)
	for _, tt := range []struct {
		name string
		d    *limiter.Decision
	}{
		{"nil", nil},
		{"cap", &caps[5]},
		{"no_window", &limiter.Decision{Limit: 10}},
		{"no_limit", &limiter.Decision{Window: time.Minute}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := refusal.Limit(tt.d); got != "" {
				t.Fatalf("refusal.Limit(%+v) = %q, want \"\"", tt.d, got)
			}
		})
	}
}
