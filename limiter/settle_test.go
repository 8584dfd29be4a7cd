package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// used returns what key has used of l's windows.
func used(t *testing.T, l *limiter.Limiter, key string) []int64 {
	t.Helper()
	u, err := l.Usage(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, w := range u.Windows {
		out = append(out, w.Used)
	}
	return out
}

// A request reserved at 1 and settled at 500 leaves a count of 500; one
// settled past the limit puts the key in debt, refused until the window
// holding the debt ends, then admitted.
func TestSettle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 12, 3, 10, 0, 10, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("tokens", limiter.PerMinute(1000), limiter.PerHour(5000)).MustUnit("acme-tokens"), limiter.WithClock(clk))
	defer l.Close()

	r, err := l.Allow(ctx, "acme", 1)
	if err != nil || !r.Allowed {
		t.Fatalf("reserve 1: %+v, %v", r, err)
	}
	if err := l.Settle(ctx, "acme", 1, 500, r); err != nil {
		t.Fatal(err)
	}
	if got := used(t, l, "acme"); got[0] != 500 || got[1] != 500 {
		t.Fatalf("reserved 1, settled 500: used %v, want 500 in each window", got)
	}

	// Past the limit: 500 + 1 reserved, settled at 800: 1300 of 1000.
	r, _ = l.Allow(ctx, "acme", 1)
	if err := l.Settle(ctx, "acme", 1, 800, r); err != nil {
		t.Fatal(err)
	}
	d, err := l.Allow(ctx, "acme", 1)
	if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter != 50*time.Second {
		t.Fatalf("in debt (1300 of 1000): %+v, %v; want refused until the minute ends, 50s", d, err)
	}
	if u, _ := l.Usage(ctx, "acme"); u.Windows[0].Used != 1300 || u.Windows[0].Remaining != 0 {
		t.Fatalf("usage in debt: %+v", u.Windows[0])
	}
	clk.Advance(50 * time.Second)
	if d, err := l.Allow(ctx, "acme", 1); err != nil || !d.Allowed {
		t.Fatalf("the next minute: %+v, %v; want admitted", d, err)
	}
	if got := used(t, l, "acme"); got[0] != 1 || got[1] != 1301 {
		t.Fatalf("the next minute: used %v, want 1 and the hour's 1301", got)
	}
}

// A settle below the reservation returns the difference to the windows
// that charged it while they are current, and never below zero; a settle
// above it, once the admission's minute has ended, is charged to the
// minute the request ended in. Usage is read at the settle's instant:
// the minute then current, and the hour.
func TestSettleAcrossABoundary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name         string
		reserved     int64
		actual       int64
		after        time.Duration // from admission, at 12:00:59.9, to settle
		minute, hour int64         // used at the settle's instant
	}{
		{"less_in_the_same_minute", 100, 40, 50 * time.Millisecond, 40, 40},
		{"less_after_the_minute_returns_to_the_hour_only", 100, 40, 200 * time.Millisecond, 0, 40},
		{"more_in_the_same_minute", 1, 10, 50 * time.Millisecond, 10, 10},
		{"more_after_the_minute_pays_in_the_next", 1, 10, 200 * time.Millisecond, 9, 10},
		{"exactly_the_reservation", 7, 7, 200 * time.Millisecond, 0, 7},
		{"nothing_used", 7, 0, 50 * time.Millisecond, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Date(2026, 12, 3, 12, 0, 59, 900_000_000, time.UTC)
			clk := limitertest.New(start)
			l := limiter.MustNew(limiter.MustPolicy("tokens", limiter.PerMinute(1000), limiter.PerHour(5000)), limiter.WithClock(clk))
			defer l.Close()
			r, err := l.Allow(ctx, "acme", tt.reserved)
			if err != nil || !r.Allowed {
				t.Fatal(r, err)
			}
			clk.Advance(tt.after)
			if err := l.Settle(ctx, "acme", tt.reserved, tt.actual, r); err != nil {
				t.Fatal(err)
			}
			if got := used(t, l, "acme"); got[0] != tt.minute || got[1] != tt.hour {
				t.Fatalf("used: the minute %d, the hour %d; want %d, %d", got[0], got[1], tt.minute, tt.hour)
			}
		})
	}
}

// Bad input: an actual cost below zero or above MaxLimit is an error that
// charges nothing and leaves the reservation to settle; a refusal settles
// nothing; a store that is no Settler is an error.
func TestSettleBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := limiter.MustNew(limiter.MustPolicy("tokens", limiter.PerMinute(10)))
	defer l.Close()
	r, _ := l.Allow(ctx, "acme", 5)
	for _, actual := range []int64{-1, limiter.MaxLimit + 1} {
		if err := l.Settle(ctx, "acme", 5, actual, r); !errors.Is(err, limiter.ErrInvalidCost) {
			t.Fatalf("Limiter.Settle(%d): %v, want ErrInvalidCost", actual, err)
		}
	}
	for _, reserved := range []int64{0, -1} {
		if err := l.Settle(ctx, "acme", reserved, 2, r); !errors.Is(err, limiter.ErrInvalidCost) {
			t.Fatalf("Limiter.Settle(reserved %d): %v, want ErrInvalidCost", reserved, err)
		}
	}
	if err := l.Settle(ctx, "", 5, 2, r); !errors.Is(err, limiter.ErrInvalidKey) {
		t.Fatalf("Limiter.Settle of no key: %v, want ErrInvalidKey", err)
	}
	if got := used(t, l, "acme"); got[0] != 5 {
		t.Fatalf("after bad settles: used %v, want the 5 reserved", got)
	}
	if err := l.Settle(ctx, "acme", 5, 2, r); err != nil {
		t.Fatalf("a good settle after bad ones: %v", err)
	}
	if got := used(t, l, "acme"); got[0] != 2 {
		t.Fatalf("settled at 2: used %v", got)
	}
	refused, _ := l.Allow(ctx, "acme", 9)
	if refused.Allowed {
		t.Fatal("9 more of 10 with 2 used: admitted")
	}
	if err := l.Settle(ctx, "acme", 9, 9, refused); err != nil {
		t.Fatalf("settling a refusal: %v, want nil", err)
	}
	if got := used(t, l, "acme"); got[0] != 2 {
		t.Fatalf("after settling a refusal: used %v, want 2", got)
	}
	plain := limiter.MustNew(limiter.MustPolicy("x", limiter.PerMinute(10)), limiter.WithStore(openStore{}))
	defer plain.Close()
	d, _ := plain.Allow(ctx, "k", 1)
	if err := plain.Settle(ctx, "k", 1, 3, d); !errors.Is(err, limiter.ErrInvalidOption) {
		t.Fatalf("Settle on a store that is no Settler: %v, want ErrInvalidOption", err)
	}
	// Reported before anything else, so that a door can ask with no key.
	if err := plain.Settle(ctx, "", 0, 0, limiter.Decision{}); !errors.Is(err, limiter.ErrInvalidOption) {
		t.Fatalf("Settle with no arguments on a store that is no Settler: %v, want ErrInvalidOption", err)
	}
	if err := l.Settle(ctx, "", 0, 0, limiter.Decision{}); errors.Is(err, limiter.ErrInvalidOption) {
		t.Fatalf("Settle with no arguments on a Settler: %v, want no ErrInvalidOption", err)
	}
}

// Units: the draft's two, and units of a service's own with a vendor
// prefix; anything else is an error.
func TestPolicyUnits(t *testing.T) {
	t.Parallel()
	p := limiter.MustPolicy("x", limiter.PerMinute(10))
	if p.Unit() != limiter.UnitRequests {
		t.Fatalf("default unit %q", p.Unit())
	}
	for _, ok := range []string{"requests", "content-bytes", "acme-tokens", "x-1"} {
		q, err := p.WithUnit(ok)
		if err != nil || q.Unit() != ok || q.ID() != p.ID() || p.Unit() != limiter.UnitRequests {
			t.Errorf("WithUnit(%q): %v, %v", ok, q, err)
		}
	}
	for _, bad := range []string{"", "tokens", "Tokens", "acme_tokens", "-acme", "concurrent-requests", "acme-tokens-and-a-very-long-name-x", "a-", "acme--tokens", "acme-tokens-", "acme-requests", "x-content-bytes", "x-concurrent-requests"} {
		if _, err := p.WithUnit(bad); !errors.Is(err, limiter.ErrInvalidPolicy) {
			t.Errorf("WithUnit(%q): %v, want ErrInvalidPolicy", bad, err)
		}
	}
	if u := limiter.MustInFlight("c", 1).Policy().Unit(); u != "concurrent-requests" {
		t.Errorf("a cap's unit %q", u)
	}
}

// A settle the limiter knows it did not apply (a context already done, a
// closed limiter) charged nothing: the admission may be settled again.
func TestSettleRetriedAfterAnError(t *testing.T) {
	t.Parallel()
	clk := limitertest.New(time.Date(2026, 12, 3, 10, 0, 10, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens"), limiter.WithClock(clk))
	defer l.Close()
	r, err := l.Allow(context.Background(), "acme", 500)
	if err != nil || !r.Allowed {
		t.Fatal(r, err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Settle(done, "acme", 500, 10, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("Settle under a done context: %v, want context.Canceled", err)
	}
	if err := l.Settle(context.Background(), "acme", 500, 10, r); err != nil {
		t.Fatalf("Settle again: %v, want it applied", err)
	}
	if got := used(t, l, "acme"); got[0] != 10 {
		t.Fatalf("used %v, want 10", got)
	}
}
