package middleware_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Headers just before, at and just after window boundaries, on a fake
// clock: Reset is the aligned end of the window, Retry-After points at it,
// rounded up to whole seconds and never under 1.
func TestHeadersAroundWindowBoundaries(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "edge", limiter.PerMinute(2))
	h := newMiddleware(t, l)(&okHandler{})
	end1, end2 := unix(t0.Add(time.Minute)), unix(t0.Add(2*time.Minute))
	steps := []struct {
		name       string
		at         time.Duration // since t0
		wantStatus int
		wantRemain string
		wantReset  string
		wantRetry  string
	}{
		{"first_of_window_at_its_start", 0, 200, "1", end1, ""},
		{"second_1ms_before_the_end", time.Minute - time.Millisecond, 200, "0", end1, ""},
		{"refused_1ms_before_the_end_retry_1", time.Minute - time.Millisecond, 429, "0", end1, "1"},
		{"new_window_at_the_boundary", time.Minute, 200, "1", end2, ""},
		{"second_in_new_window", time.Minute, 200, "0", end2, ""},
		{"refused_at_the_boundary_retry_60", time.Minute, 429, "0", end2, "60"},
		{"refused_1ms_later_rounds_up_to_60", time.Minute + time.Millisecond, 429, "0", end2, "60"},
		{"refused_with_1001ms_left_retry_2", 2*time.Minute - 1001*time.Millisecond, 429, "0", end2, "2"},
		{"refused_with_1000ms_left_retry_1", 2*time.Minute - time.Second, 429, "0", end2, "1"},
		{"refused_with_1ns_left_retry_1", 2*time.Minute - time.Nanosecond, 429, "0", end2, "1"},
		{"admitted_again_after_the_end", 2 * time.Minute, 200, "1", unix(t0.Add(3 * time.Minute)), ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.Set(t0.Add(s.at))
			w := call(h, "203.0.113.9:1234")
			if w.Code != s.wantStatus {
				t.Fatalf("at t0+%v: status = %d, want %d", s.at, w.Code, s.wantStatus)
			}
			wantHeaders(t, w, map[string]string{
				"X-RateLimit-Limit": "2", "X-RateLimit-Remaining": s.wantRemain,
				"X-RateLimit-Reset": s.wantReset, "Retry-After": s.wantRetry,
			})
		})
	}
}

// A one-second window: a refusal half-way through still says 1.
func TestRetryAfterIsAtLeastOneSecond(t *testing.T) {
	clk := newFakeClock(t0.Add(500 * time.Millisecond))
	l := newLimiter(t, clk, "fast", limiter.PerSecond(1))
	h := newMiddleware(t, l)(&okHandler{})
	call(h, "203.0.113.9:1")
	w := call(h, "203.0.113.9:2")
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("status = %d, want 429", w.Code)
	}
	wantHeaders(t, w, map[string]string{"Retry-After": "1", "X-RateLimit-Reset": unix(t0.Add(time.Second))})
}
