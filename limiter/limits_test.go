package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// A customer who spent 1,000 of a free plan's 1,000 a month and is moved
// to 2,000 a month within the month has 1,000 left, not 2,000: the
// counters belong to the key, the limit to the plan. Moved back, they are
// over the free limit and refused until the month ends.
func TestWithLimitsKeepsUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	start := time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC)
	clk := limitertest.New(start)
	store := newStore(t)
	free, err := limiter.New(limiter.MustPolicy("plan", limiter.PerMonthIn(1000, time.UTC)), limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer free.Close()
	if d, err := free.Allow(ctx, "acme", 1000); err != nil || !d.Allowed {
		t.Fatalf("the free month's 1,000: %+v, %v", d, err)
	}
	pro, err := free.WithLimits(2000)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := pro.Allow(ctx, "acme", 1); err != nil || !d.Allowed || d.Remaining != 999 || d.Limit != 2000 {
		t.Fatalf("first request on the pro plan: %+v, %v; want admitted with 999 of 2000 left", d, err)
	}
	u, err := pro.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if w := u.Windows[0]; len(u.Windows) != 1 || w.Used != 1001 || w.Limit != 2000 || w.Remaining != 999 || w.Name != "month@UTC" {
		t.Fatalf("pro usage: %+v, want 1001 used of 2000", u.Windows)
	}
	// Back on the free plan: 1,001 used of 1,000, in debt, refused to
	// the month's end.
	d, err := free.Allow(ctx, "acme", 1)
	if err != nil || d.Allowed || d.Remaining != 0 {
		t.Fatalf("back on the free plan: %+v, %v; want refused with 0 remaining", d, err)
	}
	if want := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC); !d.ResetAt.Equal(want) {
		t.Fatalf("refusal resets at %v, want the month's end %v", d.ResetAt, want)
	}
	if u, _ := free.Usage(ctx, "acme"); u.Windows[0].Used != 1001 || u.Windows[0].Remaining != 0 {
		t.Fatalf("free usage in debt: %+v, want 1001 used, 0 remaining", u.Windows[0])
	}
	// Reset under either plan forgets the one usage.
	if err := pro.Reset(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	if d, _ := free.Allow(ctx, "acme", 1); !d.Allowed || d.Remaining != 999 {
		t.Fatalf("after a Reset under the pro plan, the free plan: %+v, want 999 left", d)
	}
}

// A deploy that changes a limit keeps every customer's usage: the old
// limiter closed, the new one, of the same name and windows but another
// limit, counts on.
func TestLimitChangedByADeploy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 12, 3, 9, 30, 0, 0, time.UTC))
	store := newStore(t)
	v1, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(100), limiter.PerMinute(10)), limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if d, _ := v1.Allow(ctx, "acme", 1); !d.Allowed {
			t.Fatalf("v1 request %d refused", i+1)
		}
	}
	v1.Close()
	v2, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(200), limiter.PerMinute(10)), limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer v2.Close()
	for i := range 2 {
		if d, _ := v2.Allow(ctx, "acme", 1); !d.Allowed {
			t.Fatalf("v2 request %d refused", i+1)
		}
	}
	d, _ := v2.Allow(ctx, "acme", 1)
	if d.Allowed {
		t.Fatal("v2 admitted an 11th request in the minute: the deploy restarted the usage")
	}
	u, _ := v2.Usage(ctx, "acme")
	if u.Windows[0].Used != 10 || u.Windows[0].Limit != 200 || u.Windows[1].Used != 10 {
		t.Fatalf("usage after the deploy: %+v, want 10 of 200 an hour and 10 of 10 a minute", u.Windows)
	}
}

func TestWithLimitsShapes(t *testing.T) {
	t.Parallel()
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(1000, time.UTC), limiter.PerMinute(20)))
	defer l.Close()
	if got, err := l.WithLimits(1000, 20); err != nil || got != l {
		t.Fatalf("WithLimits of l's own limits = %p, %v; want l", got, err)
	}
	a, err := l.WithLimits(5000, 60)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := l.WithLimits(5000, 60); b != a {
		t.Fatal("WithLimits twice with the same limits made two limiters")
	}
	if a.Policy().ID() != l.Policy().ID() || !a.Policy().SameUsage(l.Policy()) || a.Policy().Rate(0).Limit != 5000 || a.Policy().Rate(1).Limit != 60 {
		t.Fatalf("derived policy %s (%s), want plan's ID with 5000 and 60", a.Policy(), a.Policy().ID())
	}
	if l.Policy().Rate(0).Limit != 1000 {
		t.Fatal("WithLimits changed l's own policy")
	}
	for _, tt := range []struct {
		name   string
		limits []int64
	}{
		{"too_few", []int64{5000}},
		{"too_many", []int64{1, 2, 3}},
		{"zero", []int64{0, 20}},
		{"over_max", []int64{limiter.MaxLimit + 1, 20}},
		{"minute_past_exact", []int64{1, 1 << 50}},
	} {
		if _, err := l.WithLimits(tt.limits...); !errors.Is(err, limiter.ErrInvalidPolicy) {
			t.Errorf("%s: WithLimits(%v) err %v, want ErrInvalidPolicy", tt.name, tt.limits, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(context.Background(), "k", 1); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("after closing a derived limiter, l.Allow err %v, want ErrClosed: they share a life", err)
	}
	if _, err := l.WithLimits(1, 1); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("WithLimits on a closed limiter: %v, want ErrClosed", err)
	}
}

// A limiter WithLimits returned shares its parent's claim: New still
// refuses a second limiter of the name and window while either lives.
func TestWithLimitsSharesTheClaim(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	l, err := limiter.New(limiter.MustPolicy("plan", limiter.PerMinute(10)), limiter.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	derived, err := l.WithLimits(20)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := limiter.New(limiter.MustPolicy("plan", limiter.PerMinute(20)), limiter.WithStore(store)); !errors.Is(err, limiter.ErrInvalidOption) {
		t.Fatalf("New beside a live plan: %v, want ErrInvalidOption", err)
	}
	derived.Close()
	again, err := limiter.New(limiter.MustPolicy("plan", limiter.PerMinute(20)), limiter.WithStore(store))
	if err != nil {
		t.Fatalf("after Close of the derived limiter (and so of its parent): %v", err)
	}
	again.Close()
}

func newStore(t *testing.T) *limiter.MemoryStore {
	t.Helper()
	s, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
