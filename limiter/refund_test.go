package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestRefund: a refund returns its cost to the windows that charged while
// each is still current, never below zero and never to a later window;
// refusals and uncharged decisions refund nothing.
func TestRefund(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	perMin := limiter.MustPolicy("refund", limiter.PerMinute(3))
	layered := limiter.MustPolicy("refund-layered", limiter.PerSecond(2), limiter.PerMinute(3))
	type step struct {
		at     time.Duration // after t0
		refund int64         // 0: Allow; else Refund this much of the last admission
		want   bool          // Allow's verdict
	}
	for _, tc := range []struct {
		name  string
		p     *limiter.Policy
		steps []step
	}{
		{"refund_frees_a_unit", perMin, []step{{0, 0, true}, {1, 0, true}, {2, 0, true}, {3, 0, false},
			{4, 1, false}, {5, 0, true}, {6, 0, false}}},
		{"refund_never_below_zero", perMin, []step{{0, 0, true}, {1, 5, false}, {2, 0, true}, {3, 0, true}, {4, 0, true}, {5, 0, false}}},
		{"refund_across_a_boundary_refunds_nothing", perMin, []step{{0, 0, true}, {1, 0, true}, {59_900, 0, true},
			{60_100, 1, false}, {60_200, 0, true}, {60_300, 0, true}, {60_400, 0, true}, {60_500, 0, false}}},
		// Charged at 0.9 s, refunded at 1.1 s: the second's window has
		// ended and gets nothing; the minute's is still current.
		{"layered_refunds_each_current_window", layered, []step{{0, 0, true}, {900, 0, true},
			{1_100, 1, false}, {1_200, 0, true}, {1_300, 0, true}, {1_400, 0, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := limitertest.New(t0)
			l, err := limiter.New(tc.p, limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			var last limiter.Decision
			for i, st := range tc.steps {
				clk.Set(t0.Add(st.at * time.Millisecond))
				if st.refund > 0 {
					if err := l.Refund(ctx, "k", st.refund, last); err != nil {
						t.Fatalf("step %d: Refund: %v", i, err)
					}
					continue
				}
				d, err := l.Allow(ctx, "k", 1)
				if err != nil || d.Allowed != st.want {
					t.Fatalf("step %d at +%dms: %+v, %v; want allowed %v", i, st.at, d, err, st.want)
				}
				if d.Allowed {
					last = d
				}
			}
		})
	}
}

// TestRefundNothingToReturn: a refusal, an uncharged decision and a zero
// Decision refund nothing; a decision of another policy is an error.
func TestRefundNothingToReturn(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	p := limiter.MustPolicy("nothing", limiter.PerMinute(1))
	l, err := limiter.New(p, limiter.WithClock(limitertest.New(t0)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	admitted, _ := l.Allow(ctx, "k", 1)
	refused, _ := l.Allow(ctx, "k", 1)
	if !admitted.Allowed || refused.Allowed {
		t.Fatalf("setup: %+v, %+v", admitted, refused)
	}
	other, _ := limiter.New(limiter.MustPolicy("other", limiter.PerMinute(1)), limiter.WithClock(limitertest.New(t0)))
	defer other.Close()
	foreign, _ := other.Allow(ctx, "k", 1)
	for _, d := range []limiter.Decision{refused, limiter.Uncharged(admitted), {}} {
		if err := l.Refund(ctx, "k", 1, d); err != nil {
			t.Fatalf("Refund(%+v): %v", d, err)
		}
		if d, _ := l.Peek(ctx, "k", 1); d.Allowed {
			t.Fatalf("refunding nothing freed the window: %+v", d)
		}
	}
	if err := l.Refund(ctx, "k", 1, foreign); !errors.Is(err, limiter.ErrInvalidPolicy) {
		t.Fatalf("Refund of another policy's decision: %v, want ErrInvalidPolicy", err)
	}
	if err := l.Refund(ctx, "k", 0, admitted); !errors.Is(err, limiter.ErrInvalidCost) {
		t.Fatalf("Refund of cost 0: %v, want ErrInvalidCost", err)
	}
}
