package headers

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestWriteUndatedDecision: a Decision not made by limiter.Decide (a
// custom middleware.Limiter's) has no instant; DecidedAt is zero.
// Dated by limiter.Dated (as the middleware does), it is written at
// that instant, else Write dates it by the system clock, so t
// is the seconds until the reset, never the reset's Unix time, and
// RateLimit lists the one window whose numbers it carries.
func TestWriteUndatedDecision(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := limiter.MustPolicy("custom", limiter.PerMinute(10), limiter.PerSecond(5))
	allowed := limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: at.Add(time.Minute), Window: time.Minute, Policy: p}
	denied := limiter.Decision{Limit: 10, ResetAt: at.Add(20 * time.Second), RetryAfter: 20 * time.Second, Window: time.Minute, Policy: p}
	tests := []struct {
		name      string
		opts      []Option
		d         limiter.Decision
		rateLimit string
	}{
		{"allowed", nil, allowed, `"custom-1m";r=7;t=60`},
		{"allowed_every_window", nil, allowed, `"custom-1m";r=7;t=60`},
		{"denied", nil, denied, `"custom-1m";r=0;t=20`},
		{"no_policy", nil, limiter.Decision{Allowed: true, Limit: 10, Remaining: 3, ResetAt: at.Add(45 * time.Second), Window: time.Minute}, `"default";r=3;t=45`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, append([]Option{WithDraftHeaders()}, tt.opts...)...)
			h := http.Header{}
			writeAt(w, h, &tt.d, at)
			if got := h.Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("Write dated %v: RateLimit = %q, want %q", at, got, tt.rateLimit)
			}
			rec := httptest.NewRecorder()
			writeDeniedAt(w, rec, httptest.NewRequest(http.MethodGet, "/", nil), &tt.d, at)
			if got := rec.Header().Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("WriteDenied dated %v: RateLimit = %q, want %q", at, got, tt.rateLimit)
			}
		})
	}
	t.Run("system_clock", func(t *testing.T) {
		d := allowed
		d.ResetAt = time.Now().Add(time.Minute)
		w := newWriter(t, WithDraftHeaders())
		h := http.Header{}
		w.Write(h, &d)
		if got := h.Get("RateLimit"); got != `"custom-1m";r=7;t=60` && got != `"custom-1m";r=7;t=59` {
			t.Fatalf("Write: RateLimit = %q, want t of 59 or 60 by the system clock", got)
		}
	})
}
