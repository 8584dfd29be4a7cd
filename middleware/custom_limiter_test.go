package middleware_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/fakeclock"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestCustomLimiterDraftHeaders: a middleware.Limiter of the user's own
// returns Decisions that limiter.Decide did not make, so they carry no
// instant. The draft t must still be the seconds until the reset, dated by
// the header writer's clock, not the reset's Unix time.
func TestCustomLimiterDraftHeaders(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := limiter.MustPolicy("custom", limiter.PerMinute(10))
	tests := []struct {
		name      string
		opts      []headers.Option
		d         limiter.Decision
		code      int
		rateLimit string
	}{
		{"allowed", nil,
			limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: at.Add(time.Minute), Window: time.Minute, Policy: p},
			http.StatusOK, `"custom";r=7;t=60`},
		{"allowed_every_window", []headers.Option{headers.WithEveryWindow()},
			limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: at.Add(time.Minute), Window: time.Minute, Policy: p},
			http.StatusOK, `"custom";r=7;t=60`},
		{"denied", nil,
			limiter.Decision{Limit: 10, ResetAt: at.Add(20 * time.Second), RetryAfter: 20 * time.Second, Window: time.Minute, Policy: p},
			http.StatusTooManyRequests, `"custom";r=0;t=20`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hw, err := headers.New(append([]headers.Option{headers.WithDraftHeaders(), headers.WithClock(fakeclock.New(at))}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			h := newMiddleware(t, &stubLimiter{policy: p, d: tt.d}, middleware.WithHeaders(hw))(&okHandler{})
			res := call(h, "192.0.2.1:1")
			if res.Code != tt.code {
				t.Fatalf("status %d, want %d", res.Code, tt.code)
			}
			if got := res.Header().Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
		})
	}
}
