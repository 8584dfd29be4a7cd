package redisstore

import (
	"context"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestCorruptValueRefused: a value the store did not write (not a count,
// a negative count, a value of another type) makes the key refuse (fail
// closed), with no error and its value untouched, and does not disturb other
// keys decided in the same script call.
func TestCorruptValueRefused(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("corrupt", limiter.PerMinute(5))
	for _, tc := range []struct {
		name  string
		clock clockSource
		write func(key string) error
	}{
		{"app_not_a_number", appClock, func(k string) error { return c.Set(ctx, k, "abc", 0).Err() }},
		{"app_negative", appClock, func(k string) error { return c.Set(ctx, k, "-3", 0).Err() }},
		{"app_wrong_type", appClock, func(k string) error { return c.HSet(ctx, k, "x", 1).Err() }},
		{"server_bad_window", serverClock, func(k string) error { return c.Set(ctx, k, "zz:1", 0).Err() }},
		{"server_window_far_ahead", serverClock, func(k string) error { return c.Set(ctx, k, "1e15:1", 0).Err() }},
		{"server_window_huge", serverClock, func(k string) error { return c.Set(ctx, k, "1e300:1", 0).Err() }},
		{"server_window_fractional", serverClock, func(k string) error { return c.Set(ctx, k, "29774995.5:1", 0).Err() }},
		{"server_window_negative", serverClock, func(k string) error { return c.Set(ctx, k, "-7:1", 0).Err() }},
		{"server_no_window", serverClock, func(k string) error { return c.Set(ctx, k, "1", 0).Err() }},
		{"server_wrong_type", serverClock, func(k string) error { return c.HSet(ctx, k, "w", 1, "c", 1).Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, c, withClockSource(tc.clock), WithOverLimitCache(0))
			clk := limitertest.New(t0)
			l := newLimiter(t, p, s, clk)
			key := keyOf(s, "bad", p, 0, clk.Now())
			if err := tc.write(key); err != nil {
				t.Fatal(err)
			}
			before, _ := c.Dump(ctx, key).Result()
			// Decide the corrupt key and a sound one together, in one batch
			// when the calls overlap.
			results := make(chan limiter.Decision, 2)
			errs := make(chan error, 2)
			for _, k := range []string{"bad", "good"} {
				go func() {
					d, err := l.Allow(ctx, k, 1)
					results <- d
					errs <- err
				}()
			}
			allowed := 0
			for range 2 {
				if err := <-errs; err != nil {
					t.Fatalf("Allow: %v", err)
				}
				if (<-results).Allowed {
					allowed++
				}
			}
			if allowed != 1 {
				t.Fatalf("admitted %d of {corrupt, sound}, want 1", allowed)
			}
			if d, err := l.Allow(ctx, "bad", 1); err != nil || d.Allowed {
				t.Fatalf("corrupt key: %+v, %v; want refused", d, err)
			}
			if after, _ := c.Dump(ctx, key).Result(); after != before {
				t.Fatal("a refusal of a corrupt key rewrote it")
			}
		})
	}
}
