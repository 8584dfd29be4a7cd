package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestRefundUsage: a refund of a usage returns its cost to every window
// the usage showed while each is still current, never below zero, and
// frees a key refused at its limit.
func TestRefundUsage(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	p := limiter.MustPolicy("support", limiter.PerMinute(5), limiter.PerHour(10))
	for _, tc := range []struct {
		name     string
		used     int64         // charged at t0+1s
		readAt   time.Duration // Usage read at t0+readAt
		refundAt time.Duration // RefundUsage at t0+refundAt
		usedThen int64         // charged at refundAt, before the refund
		cost     int64
		want     [2]int64 // used per window after the refund
	}{
		{"returns_to_every_window", 4, 2 * time.Second, 3 * time.Second, 0, 2, [2]int64{2, 2}},
		{"never_below_zero", 1, 2 * time.Second, 3 * time.Second, 0, 3, [2]int64{0, 0}},
		{"frees_a_key_at_its_limit", 5, 2 * time.Second, 3 * time.Second, 0, 5, [2]int64{0, 0}},
		// Read at 12:00:59, refunded at 12:01:01: the minute shown has
		// ended, and the new one keeps what it counted; the hour is
		// still the one shown.
		{"window_ended_since_read_gets_nothing", 4, 59 * time.Second, 61 * time.Second, 1, 3, [2]int64{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := limitertest.New(t0.Add(time.Second))
			l := limiter.MustNew(p, limiter.WithClock(clk))
			defer l.Close()
			if _, err := l.Allow(ctx, "acme", tc.used); err != nil {
				t.Fatal(err)
			}
			clk.Set(t0.Add(tc.readAt))
			u, err := l.Usage(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			clk.Set(t0.Add(tc.refundAt))
			if tc.usedThen > 0 {
				if d, err := l.Allow(ctx, "acme", tc.usedThen); err != nil || !d.Allowed {
					t.Fatalf("Allow(%d) before the refund: %+v, %v", tc.usedThen, d, err)
				}
			}
			if err := l.RefundUsage(ctx, "acme", tc.cost, u); err != nil {
				t.Fatalf("RefundUsage(%d): %v", tc.cost, err)
			}
			after, err := l.Usage(ctx, "acme")
			if err != nil {
				t.Fatal(err)
			}
			if got := [2]int64{after.Windows[0].Used, after.Windows[1].Used}; got != tc.want {
				t.Fatalf("used %d then refund %d: got %v, want %v", tc.used, tc.cost, got, tc.want)
			}
		})
	}
}

// TestRefundUsageOfAnotherPlan: a usage read under other limits of the
// same usage (For) refunds the counts both share.
func TestRefundUsageOfAnotherPlan(t *testing.T) {
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerHour(3)), limiter.WithClock(clk))
	defer l.Close()
	pro, err := l.For(planOf("plan-10", l.Policy().Name(), 10), "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pro.Allow(ctx, "acme", 3); err != nil {
		t.Fatal(err)
	}
	u, err := pro.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RefundUsage(ctx, "acme", 2, u); err != nil {
		t.Fatal(err)
	}
	if d, err := l.Allow(ctx, "acme", 2); err != nil || !d.Allowed {
		t.Fatalf("under the base plan after a refund of 2 of 3: %+v, %v; want admitted", d, err)
	}
}

// TestRefundUsageRefuses: bad input is an error and refunds nothing.
func TestRefundUsageRefuses(t *testing.T) {
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("mine", limiter.PerHour(1)), limiter.WithClock(clk))
	defer l.Close()
	other := limiter.MustNew(limiter.MustPolicy("other", limiter.PerHour(1)), limiter.WithClock(clk))
	defer other.Close()
	if _, err := l.Allow(ctx, "acme", 1); err != nil {
		t.Fatal(err)
	}
	mine, _ := l.Usage(ctx, "acme")
	foreign, _ := other.Usage(ctx, "acme")
	for _, tc := range []struct {
		name string
		key  string
		cost int64
		u    limiter.Usage
		want error
	}{
		{"zero_cost", "acme", 0, mine, limiter.ErrInvalidCost},
		{"negative_cost", "acme", -1, mine, limiter.ErrInvalidCost},
		{"empty_key", "", 1, mine, limiter.ErrInvalidKey},
		{"zero_usage", "acme", 1, limiter.Usage{}, limiter.ErrInvalidPolicy},
		{"another_policy", "acme", 1, foreign, limiter.ErrInvalidPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := l.RefundUsage(ctx, tc.key, tc.cost, tc.u); !errors.Is(err, tc.want) {
				t.Fatalf("RefundUsage(%q, %d): %v, want %v", tc.key, tc.cost, err, tc.want)
			}
			if d, _ := l.Peek(ctx, "acme", 1); d.Allowed {
				t.Fatal("a refused refund freed the window")
			}
		})
	}
}
