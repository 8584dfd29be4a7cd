package headers

import (
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// newYear is 2026-01-01 00:00:00 UTC; a minute's window then ends at Unix
// 1767225660, the number a custom decision's t used to carry.
var newYear = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestWriteDraftUndatedDecision: a Decision not made by limiter.Decide (a
// custom Limiter's) has no DecidedAt of its own. Dated (limiter.Dated, as
// the middleware does), t is the seconds until the reset, and RateLimit,
// which cannot compute the other windows of a decision Decide did not
// make, lists the deciding window alone.
func TestWriteDraftUndatedDecision(t *testing.T) {
	custom := limiter.MustPolicy("custom", limiter.PerMinute(10))
	layered := limiter.MustPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	tests := []struct {
		name       string
		opts       []Option
		d          limiter.Decision
		rateLimit  string
		policy     string
		retryAfter string
	}{
		{"with_policy", nil,
			limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: newYear.Add(time.Minute), Window: time.Minute, Policy: custom},
			`"custom";r=7;t=60`, `"custom";q=10;w=60`, ""},
		{"with_policy_every_window", nil,
			limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: newYear.Add(time.Minute), Window: time.Minute, Policy: custom},
			`"custom";r=7;t=60`, `"custom";q=10;w=60`, ""},
		{"layered_every_window", nil,
			limiter.Decision{Allowed: true, Limit: 5, Remaining: 2, ResetAt: newYear.Add(time.Second), Window: time.Second, Policy: layered},
			`"api-1s";r=2;t=1`, `"api-1m";q=100;w=60, "api-1s";q=5;w=1`, ""},
		{"denied", nil,
			limiter.Decision{Limit: 10, ResetAt: newYear.Add(45 * time.Second), RetryAfter: 45 * time.Second, Window: time.Minute, Policy: custom},
			`"custom";r=0;t=45`, `"custom";q=10;w=60`, "45"},
		{"without_policy", nil,
			limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: newYear.Add(time.Minute), Window: time.Minute},
			`"default";r=7;t=60`, `"default";q=10;w=60`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, append([]Option{WithDraftHeaders()}, tt.opts...)...)
			h := http.Header{}
			writeAt(w, h, &tt.d, newYear)
			if got := h.Get("RateLimit"); got != tt.rateLimit {
				t.Errorf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
			if got := h.Get("RateLimit-Policy"); got != tt.policy {
				t.Errorf("RateLimit-Policy = %q, want %q", got, tt.policy)
			}
			if got := h.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
		})
	}
}

// TestWriteDraftIntegersFit: every number of the draft fields is an RFC
// 9651 Integer, at most 15 digits. The largest policy gives exactly 15;
// a custom decision's out-of-range numbers are clamped into 0..MaxLimit.
func TestWriteDraftIntegersFit(t *testing.T) {
	huge := limiter.MustPolicy("huge", limiter.Rate{Limit: limiter.MaxLimit, Window: time.Millisecond})
	tests := []struct {
		name      string
		d         func() limiter.Decision
		rateLimit string
		policy    string
	}{
		{"max_limit_policy", func() limiter.Decision {
			_, d := limiter.Decide(huge, [limiter.MaxWindows]limiter.State{}, newYear, 1)
			return d
		}, `"huge";r=999999999999998;t=1`, `"huge";q=999999999999999`},
		{"custom_sixteen_digits", func() limiter.Decision {
			return limiter.Decision{Allowed: true, Limit: 1 << 53, Remaining: 1<<53 - 1, ResetAt: newYear.Add(time.Second), Window: time.Second}
		}, `"default";r=999999999999999;t=1`, `"default";q=999999999999999;w=1`},
		{"custom_negative_remaining", func() limiter.Decision {
			return limiter.Decision{Allowed: true, Limit: 10, Remaining: -3, ResetAt: newYear.Add(time.Second), Window: time.Second}
		}, `"default";r=0;t=1`, `"default";q=10;w=1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, WithDraftHeaders())
			d := tt.d()
			h := http.Header{}
			writeAt(w, h, &d, newYear)
			if got := h.Get("RateLimit"); got != tt.rateLimit {
				t.Errorf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
			if got := h.Get("RateLimit-Policy"); got != tt.policy {
				t.Errorf("RateLimit-Policy = %q, want %q", got, tt.policy)
			}
		})
	}
}
