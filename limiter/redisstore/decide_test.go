package redisstore

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestMatchesMemoryStore replays one random sequence of requests against
// the in-memory store and the Redis store, with one fake clock, and wants
// identical decisions: both apply limiter.Decide.
func TestMatchesMemoryStore(t *testing.T) {
	c := sharedClient(t)
	policies := []struct {
		name string
		p    *limiter.Policy
	}{
		{"single_10_per_second", limiter.MustPolicy("one", limiter.PerSecond(10))},
		{"layered_minute_and_second", limiter.MustPolicy("two", limiter.PerMinute(30), limiter.PerSecond(5))},
		{"four_windows", limiter.MustPolicy("four", limiter.Rate{Limit: 3, Window: 250 * time.Millisecond},
			limiter.PerSecond(7), limiter.Rate{Limit: 20, Window: 10 * time.Second}, limiter.PerMinute(50))},
		// The largest limit (limiter.MaxLimit), on a window that brings
		// limit × window-ms within 0.1% of the 2^53 budget.
		{"big_limit_1ms_window", limiter.MustPolicy("big", limiter.Rate{Limit: limiter.MaxLimit, Window: 9 * time.Millisecond})},
	}
	for _, pc := range policies {
		for _, mode := range []path{pathBatch, pathPlain} {
			t.Run(pc.name+"/"+mode.String(), func(t *testing.T) {
				ctx := context.Background()
				clk := limitertest.New(t0.Add(123 * time.Millisecond))
				mem, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
				if err != nil {
					t.Fatal(err)
				}
				defer mem.Close()
				rs := newStore(t, c, withPath(mode))
				rng := rand.New(rand.NewPCG(1, uint64(len(pc.name))))
				keys := []string{"a", "b{x}", "c}%"}
				for i := range 600 {
					clk.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
					req := limiter.Request{
						Key:    keys[rng.IntN(len(keys))],
						Policy: pc.p,
						Now:    clk.Now(),
						Cost:   1 + rng.Int64N(3),
						Peek:   rng.IntN(10) == 0,
					}
					if pc.name == "big_limit_1ms_window" {
						req.Cost = 1 << rng.IntN(53)
					}
					want, err := mem.Take(ctx, req)
					if err != nil {
						t.Fatal(err)
					}
					got, err := rs.Take(ctx, req)
					if err != nil {
						t.Fatalf("step %d: Take: %v", i, err)
					}
					if !sameDecision(got, want) {
						t.Fatalf("step %d (%+v): got %+v, want %+v", i, req, got, want)
					}
				}
			})
		}
	}
}

func sameDecision(a, b limiter.Decision) bool {
	if a.Allowed != b.Allowed || a.Limit != b.Limit || a.Remaining != b.Remaining ||
		!a.ResetAt.Equal(b.ResetAt) || a.RetryAfter != b.RetryAfter || a.Window != b.Window {
		return false
	}
	if a.NumWindows() != b.NumWindows() {
		return false
	}
	for i := range a.NumWindows() {
		if a.WindowAt(i) != b.WindowAt(i) {
			return false
		}
	}
	return true
}
