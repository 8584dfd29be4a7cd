package limiter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// A customer who spent 1,000 of a free plan's 1,000 a month and is moved
// to 2,000 a month within the month has 1,000 left, not 2,000: the
// counters belong to the key, the limit to the plan. Moved back, they are
// over the free limit and refused until the month ends.
func TestPlanKeepsUsage(t *testing.T) {
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
	pro, err := free.For(planOf("pro", "plan", 2000), "")
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

func TestForShapes(t *testing.T) {
	t.Parallel()
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(1000, time.UTC), limiter.PerMinute(20)))
	defer l.Close()
	if got, err := l.For(planOf("same", "plan", 1000, 20), ""); err != nil || got != l {
		t.Fatalf("For a plan of l's own limits = %p, %v; want l", got, err)
	}
	if got, err := l.For(nil, ""); err != nil || got != l {
		t.Fatalf("For(nil, \"\") = %p, %v; want l", got, err)
	}
	if got, err := l.For(planOf("other", "api", 1), ""); err != nil || got != l {
		t.Fatalf("For a plan that names another policy = %p, %v; want l", got, err)
	}
	a, err := l.For(planOf("pro", "plan", 5000, 60), "")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := l.For(planOf("pro-again", "plan", 5000, 60), ""); b != a {
		t.Fatal("For twice with the same limits made two limiters")
	}
	if c, _ := a.For(planOf("from-derived", "plan", 5000, 60), ""); c != a {
		t.Fatal("For on a derived limiter did not derive from the policy New was given")
	}
	if a.Policy().ID() != l.Policy().ID() || a.Policy().Rate(0).Limit != 5000 || a.Policy().Rate(1).Limit != 60 {
		t.Fatalf("derived policy %s (%s), want plan's ID with 5000 and 60", a.Policy(), a.Policy().ID())
	}
	if l.Policy().Rate(0).Limit != 1000 {
		t.Fatal("For changed l's own policy")
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
		if _, err := l.For(planOf(tt.name, "plan", tt.limits...), ""); !errors.Is(err, limiter.ErrInvalidPolicy) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: For(%v) err %v, want ErrInvalidPolicy naming the plan", tt.name, tt.limits, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Allow(context.Background(), "k", 1); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("after closing a derived limiter, l.Allow err %v, want ErrClosed: they share a life", err)
	}
	if _, err := l.For(planOf("late", "plan", 1, 1), ""); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("For on a closed limiter: %v, want ErrClosed", err)
	}
}

// planOf returns a plan named name that sets policy's limits.
func planOf(name, policy string, limits ...int64) *limiter.Plan {
	return &limiter.Plan{Name: name, Limits: map[string][]int64{policy: limits}}
}

// A limiter For returned shares its parent's claim: New still refuses a
// second limiter of the name and window while either lives.
func TestForSharesTheClaim(t *testing.T) {
	t.Parallel()
	store := newStore(t)
	l, err := limiter.New(limiter.MustPolicy("plan", limiter.PerMinute(10)), limiter.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	derived, err := l.For(planOf("pro", "plan", 20), "")
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

// zoneMidnights are four customers' zones and the instant, in UTC, their
// 2027 starts: each month ends at its own midnight.
var zoneMidnights = []struct {
	zone     string
	midnight time.Time
}{
	{"Pacific/Auckland", time.Date(2026, 12, 31, 11, 0, 0, 0, time.UTC)},
	{"Asia/Kolkata", time.Date(2026, 12, 31, 18, 30, 0, 0, time.UTC)},
	{"Europe/Paris", time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC)},
	{"America/New_York", time.Date(2027, 1, 1, 5, 0, 0, 0, time.UTC)},
}

// TestForZones: one limiter, of one policy (3 a month, in the
// customer's zone), decides customers in Auckland, Kolkata, Paris and New
// York: each is refused at the end of their own month, with ResetAt at
// their own midnight, and admitted again from that midnight, while the
// others, whose month has not ended, are still refused. Each zone counts
// apart: its own counters, named by the zone.
func TestForZones(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 12, 31, 8, 0, 0, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(3, time.UTC), limiter.PerMinute(100)), limiter.WithClock(clk))
	defer l.Close()
	in := func(zone string) *limiter.Limiter {
		t.Helper()
		z, err := l.For(nil, zone)
		if err != nil {
			t.Fatalf("For(nil, %q): %v", zone, err)
		}
		return z
	}
	for _, c := range zoneMidnights {
		z := in(c.zone)
		if want := "plan:month@" + c.zone + ":60000"; z.Policy().ID() != want {
			t.Fatalf("%s: policy ID %q, want %q", c.zone, z.Policy().ID(), want)
		}
		for i := range 3 {
			if d, err := z.Allow(ctx, c.zone, 1); err != nil || !d.Allowed {
				t.Fatalf("%s: request %d: %+v, %v", c.zone, i+1, d, err)
			}
		}
		d, err := z.Allow(ctx, c.zone, 1)
		if err != nil || d.Allowed || !d.ResetAt.Equal(c.midnight) {
			t.Fatalf("%s: the 4th of 3: %+v, %v; want refused until %v, its midnight", c.zone, d, err, c.midnight)
		}
		if in(c.zone) != z {
			t.Fatalf("%s: For twice made two limiters", c.zone)
		}
	}
	for i, c := range zoneMidnights {
		clk.Set(c.midnight)
		if d, err := in(c.zone).Allow(ctx, c.zone, 1); err != nil || !d.Allowed {
			t.Fatalf("%s at its midnight: %+v, %v; want admitted", c.zone, d, err)
		}
		for _, later := range zoneMidnights[i+1:] {
			if d, _ := in(later.zone).Allow(ctx, later.zone, 1); d.Allowed {
				t.Fatalf("%s at %s's midnight: admitted before its own", later.zone, c.zone)
			}
		}
	}
}

// TestForZoneChangeMidMonth: a customer who moves from Paris to New York
// within a month is counted in New York's month from then on, from what
// New York's month holds (nothing); the minute, the same window in any
// zone, keeps its count; Paris's month keeps what was used there, found
// again if the customer moves back within it.
func TestForZoneChangeMidMonth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := limitertest.New(time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC))
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(10, time.UTC), limiter.PerMinute(6)), limiter.WithClock(clk))
	defer l.Close()
	paris, _ := l.For(nil, "Europe/Paris")
	ny, _ := l.For(nil, "America/New_York")
	for range 4 {
		paris.Allow(ctx, "acme", 1)
	}
	u, _ := ny.Usage(ctx, "acme")
	if u.Windows[0].Used != 0 || u.Windows[1].Used != 4 || u.Windows[0].Name != "month@America/New_York" {
		t.Fatalf("moved to New York: %+v; want New York's month at 0, the minute at 4", u.Windows)
	}
	ny.Allow(ctx, "acme", 1)
	ny.Allow(ctx, "acme", 1)
	if d, _ := ny.Allow(ctx, "acme", 1); d.Allowed {
		t.Fatal("a 7th request in the minute, across zones, admitted: the minute is one window in any zone")
	}
	clk.Advance(time.Minute)
	if u, _ := paris.Usage(ctx, "acme"); u.Windows[0].Used != 4 {
		t.Fatalf("back in Paris: month used %d, want the 4 used there", u.Windows[0].Used)
	}
	if u, _ := ny.Usage(ctx, "acme"); u.Windows[0].Used != 2 {
		t.Fatalf("New York's month: used %d, want 2", u.Windows[0].Used)
	}
}

// TestForBadZones: a zone that names no zone of the tz database is an
// error wrapping ErrInvalidPolicy, and nothing is loaded for it.
func TestForBadZones(t *testing.T) {
	t.Parallel()
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(10, time.UTC)))
	defer l.Close()
	for _, zone := range []string{"Local", "Mars/Olympus_Mons", "../../../etc/passwd", "/etc/localtime", "Europe/Paris\n", strings.Repeat("A/", 40), "Europe//Paris", "./Europe/Paris", "localtime", "posix/Europe/Paris", "right/Europe/Paris"} {
		if _, err := l.For(nil, zone); !errors.Is(err, limiter.ErrInvalidPolicy) {
			t.Errorf("For(nil, %q): %v, want ErrInvalidPolicy", zone, err)
		}
	}
	// A policy without calendar rates ignores the zone, as every request
	// is counted in the same windows.
	fixed := limiter.MustNew(limiter.MustPolicy("fixed", limiter.PerMinute(10)))
	defer fixed.Close()
	z, err := fixed.For(nil, "Asia/Tokyo")
	if err != nil || z.Policy().ID() != fixed.Policy().ID() {
		t.Fatalf("a zone for a policy of fixed windows: %v, %v; want the same usage", z, err)
	}
}

// TestInFlightFor: caps per plan (2 exports on free, 10 on pro) on one
// cap of slots: a customer's slots count whatever their plan, and a plan
// that names no maximum keeps the cap's own.
func TestInFlightFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := limiter.MustInFlight("exports", 1)
	defer f.Close()
	free := &limiter.Plan{Name: "free", Caps: map[string]int64{"exports": 2}}
	pro := &limiter.Plan{Name: "pro", Caps: map[string]int64{"exports": 10}}
	onFree, err := f.For(free)
	if err != nil {
		t.Fatal(err)
	}
	onPro, _ := f.For(pro)
	var releases []func()
	for i := range 2 {
		d, release, err := onFree.Acquire(ctx, "acme")
		if err != nil || !d.Allowed || d.Limit != 2 {
			t.Fatalf("free export %d: %+v, %v", i+1, d, err)
		}
		releases = append(releases, release)
	}
	if d, _, _ := onFree.Acquire(ctx, "acme"); d.Allowed {
		t.Fatal("a 3rd export on free admitted")
	}
	d, release, err := onPro.Acquire(ctx, "acme")
	if err != nil || !d.Allowed || d.Remaining != 7 {
		t.Fatalf("moved to pro with 2 running: %+v, %v; want admitted, 7 of 10 left", d, err)
	}
	release()
	for _, r := range releases {
		r()
	}
	if again, _ := f.For(&limiter.Plan{Name: "another", Caps: map[string]int64{"exports": 2}}); again != onFree {
		t.Fatal("two plans of one maximum made two caps")
	}
	if own, _ := f.For(&limiter.Plan{Name: "none"}); own != f {
		t.Fatal("a plan that names no maximum did not keep the cap's own")
	}
	for _, m := range []int64{0, -1, limiter.MaxLimit + 1} {
		if _, err := f.For(&limiter.Plan{Name: "bad", Caps: map[string]int64{"exports": m}}); !errors.Is(err, limiter.ErrInvalidPolicy) {
			t.Errorf("a cap of %d: %v, want ErrInvalidPolicy", m, err)
		}
	}
	onPro.Close()
	if _, _, err := f.Acquire(ctx, "acme"); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("after closing a cap For returned: %v, want ErrClosed: they share a life", err)
	}
}

// TestForByAddressKeepsZonesAndPlansApart: plans found by their address
// (For's Recent, written one call in eight) still get their own limits
// in each zone: two plans of other limits, and one plan in every zone of
// zoneMidnights, asked in turn many times, each answered the limiter of
// its limits and zone, the same one every time.
func TestForByAddressKeepsZonesAndPlansApart(t *testing.T) {
	t.Parallel()
	l := limiter.MustNew(limiter.MustPolicy("plan", limiter.PerMonthIn(3, time.UTC), limiter.PerMinute(100)),
		limiter.WithClock(limitertest.New(time.Date(2026, 12, 31, 8, 0, 0, 0, time.UTC))))
	defer l.Close()
	plans := []*limiter.Plan{
		{Name: "free", Limits: map[string][]int64{"plan": {5, 10}}},
		{Name: "pro", Limits: map[string][]int64{"plan": {50, 100}}},
	}
	first := map[string]*limiter.Limiter{}
	for i := range 400 {
		p := plans[i%len(plans)]
		zone := zoneMidnights[i/len(plans)%len(zoneMidnights)].zone
		z, err := l.For(p, zone)
		if err != nil {
			t.Fatalf("For(%s, %s): %v", p.Name, zone, err)
		}
		q := z.Policy()
		if want := "plan:month@" + zone + ":60000"; q.ID() != want || q.Rate(0).Limit != p.Limits["plan"][0] || q.Rate(1).Limit != p.Limits["plan"][1] {
			t.Fatalf("call %d: For(%s, %s) = %s of %d and %d; want %s of %v", i, p.Name, zone, q.ID(), q.Rate(0).Limit, q.Rate(1).Limit, want, p.Limits["plan"])
		}
		k := p.Name + "@" + zone
		if f, ok := first[k]; !ok {
			first[k] = z
		} else if f != z {
			t.Fatalf("call %d: For(%s, %s) made a second limiter", i, p.Name, zone)
		}
	}
}
