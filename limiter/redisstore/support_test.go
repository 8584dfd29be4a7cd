package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// replicaPair returns two stores on one Redis and one prefix, each with
// a client of its own (two replicas), and their limiters of p on clk.
func replicaPair(t *testing.T, p *limiter.Policy, clk *limitertest.Clock, opts ...Option) (a, b *Store, la, lb *limiter.Limiter) {
	t.Helper()
	prefix := testPrefix(t)
	mk := func() *Store {
		s, err := New(redistest.Client(t, redistest.SharedAddr), append([]Option{WithPrefix(prefix), WithTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b = mk(), mk()
	return a, b, newLimiter(t, p, a, clk), newLimiter(t, p, b, clk)
}

// fakeMono gives a store's over-limit cache and leases a monotonic clock
// the test moves, for entries that age on it (WithServerClock).
func fakeMono(s *Store) *atomic.Int64 {
	var m atomic.Int64
	mono := func() time.Duration { return time.Duration(m.Load()) }
	if s.cache != nil {
		s.cache.mono = mono
	}
	if s.leases != nil {
		s.leases.mono = mono
	}
	return &m
}

// TestSupportActionsObeyedEverywhere: what support does on replica A (a
// Reset, a refund of an admission, a refund of a usage read) is obeyed by replica B, whose over-limit cache refuses
// the key, within a second: B asks Redis again once its entry is a second
// old. A raised limit (another plan of the same usage) needs no wait: B
// decides again under the request's limits.
func TestSupportActionsObeyedEverywhere(t *testing.T) {
	ctx := context.Background()
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, action := range []string{"reset", "refund", "refund_usage", "raised_limit"} {
			t.Run(clock.String()+"/"+action, func(t *testing.T) {
				p := limiter.MustPolicy("plan", limiter.PerHour(3))
				clk := limitertest.New(t0)
				a, b, la, lb := replicaPair(t, p, clk, withClockSource(clock))
				mono := fakeMono(b)
				if clock == serverClock {
					awaitServerWindow(t, sharedClient(t), time.Hour)
				}
				var first limiter.Decision
				for i := range 3 {
					d, err := lb.Allow(ctx, "acme", 1)
					if err != nil || !d.Allowed {
						t.Fatalf("B's request %d: %+v, %v", i+1, d, err)
					}
					if i == 0 {
						first = d
					}
				}
				if d, _ := lb.Allow(ctx, "acme", 1); d.Allowed {
					t.Fatal("B admitted a fourth of 3")
				}
				cached := b.Stats().Cached
				if d, _ := lb.Allow(ctx, "acme", 1); d.Allowed || b.Stats().Cached != cached+1 {
					t.Fatalf("B's fifth: %+v, cached %d → %d; want refused from its cache", d, cached, b.Stats().Cached)
				}
				switch action {
				case "reset":
					if err := la.Reset(ctx, "acme"); err != nil {
						t.Fatal(err)
					}
				case "refund":
					if err := la.Refund(ctx, "acme", 1, first); err != nil {
						t.Fatal(err)
					}
				case "refund_usage":
					u, err := la.Usage(ctx, "acme")
					if err != nil {
						t.Fatal(err)
					}
					if err := la.RefundUsage(ctx, "acme", 2, u); err != nil {
						t.Fatal(err)
					}
					if u, err = la.Usage(ctx, "acme"); err != nil || u.Windows[0].Used != 1 {
						t.Fatalf("A's usage after refunding 2 of 3: %+v, %v; want 1 used", u, err)
					}
				case "raised_limit":
					pro, err := lb.For(&limiter.Plan{Name: "pro", Limits: map[string][]int64{"plan": {5}}}, "")
					if err != nil {
						t.Fatal(err)
					}
					if d, err := pro.Allow(ctx, "acme", 1); err != nil || !d.Allowed || d.Remaining != 1 {
						t.Fatalf("B under a raised limit, at once: %+v, %v; want admitted, 1 of 5 left", d, err)
					}
					_ = a
					return
				}
				// Within the second B may still refuse from its cache;
				// past it, it asks Redis and is admitted.
				clk.Advance(maxLocalAge + time.Millisecond)
				mono.Add(int64(maxLocalAge + time.Millisecond))
				if d, err := lb.Allow(ctx, "acme", 1); err != nil || !d.Allowed {
					t.Fatalf("B a second after A's %s: %+v, %v; want admitted", action, d, err)
				}
			})
		}
	}
}

// TestLeaseObeysAResetWithinASecond: a replica that holds a lease of a
// key spends it for at most a second after another replica's Reset; then
// its requests go to Redis, which has the fresh count.
func TestLeaseObeysAResetWithinASecond(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("plan", limiter.PerHour(1000))
	clk := limitertest.New(t0)
	_, b, la, lb := replicaPair(t, p, clk, WithLeases(500*time.Millisecond, 10))
	hot(t, lb, clk, 20)
	if b.Stats().Leased == 0 {
		t.Fatal("B decided nothing from a lease: the test needs one")
	}
	if err := la.Reset(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(maxLocalAge)
	decided := b.Stats().Decisions
	if d, err := lb.Allow(ctx, "acme", 1); err != nil || !d.Allowed {
		t.Fatalf("B after the second: %+v, %v", d, err)
	}
	if b.Stats().Decisions != decided+1 {
		t.Fatalf("B decided from a lease granted more than a second before: Decisions %d → %d", decided, b.Stats().Decisions)
	}
	u, err := la.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	// One request, and what B leased beside it: the counts before the
	// Reset are gone.
	if used := u.Windows[0].Used; used < 1 || used > 1+1000/10 {
		t.Fatalf("usage after the Reset and one request: %d, want 1 plus at most one lease", used)
	}
}

// TestRollingDeployCountsOneUsage: two replicas on two versions, one with
// a limit of 10 an hour and one with 20, of one policy name and window,
// count one usage: together they admit 20, and the old one refuses from
// the tenth on.
func TestRollingDeployCountsOneUsage(t *testing.T) {
	ctx := context.Background()
	clk := limitertest.New(t0)
	prefix := testPrefix(t)
	var ls []*limiter.Limiter
	for _, limit := range []int64{10, 20} {
		s, err := New(redistest.Client(t, redistest.SharedAddr), WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ls = append(ls, newLimiter(t, limiter.MustPolicy("api", limiter.PerHour(limit)), s, clk))
	}
	old, next := ls[0], ls[1]
	admitted := 0
	for i := range 40 {
		if d, err := []*limiter.Limiter{old, next}[i%2].Allow(ctx, "acme", 1); err != nil {
			t.Fatal(err)
		} else if d.Allowed {
			admitted++
		}
	}
	if admitted != 20 {
		t.Fatalf("two versions admitted %d in all, want 20: one usage, the new limit the larger", admitted)
	}
	if d, _ := old.Allow(ctx, "acme", 1); d.Allowed {
		t.Fatal("the old version admitted past its own limit of 10")
	}
	u, _ := old.Usage(ctx, "acme")
	if u.Windows[0].Used != 20 || u.Windows[0].Limit != 10 || u.Windows[0].Remaining != 0 {
		t.Fatalf("the old version's view: %+v, want 20 used of its 10", u.Windows[0])
	}
}

// TestLeaseLeftoverGivenBack: a lease ends a second after its grant; what
// it held unspent goes back to its window in Redis with the replica's next
// request for the key, so that other replicas may spend it.
func TestLeaseLeftoverGivenBack(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("plan", limiter.PerHour(1000))
	clk := limitertest.New(t0)
	_, b, la, lb := replicaPair(t, p, clk, WithLeases(500*time.Millisecond, 10))
	hot(t, lb, clk, 20)
	u, err := la.Usage(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	leased := u.Windows[0].Used - 20
	if leased <= 0 {
		t.Fatalf("Redis counts %d after B's 20 requests: B holds no lease, the test needs one", u.Windows[0].Used)
	}
	clk.Advance(maxLocalAge)
	if d, err := lb.Allow(ctx, "acme", 1); err != nil || !d.Allowed {
		t.Fatalf("B after its lease ended: %+v, %v", d, err)
	}
	if got := int64(b.Stats().GivenBack); got != leased {
		t.Fatalf("B gave back %d units, want the %d its lease held", got, leased)
	}
	u, _ = la.Usage(ctx, "acme")
	if used := u.Windows[0].Used; used < 21 || used > 21+1000/10 {
		t.Fatalf("usage after the give-back: %d, want 21 and at most a new lease", used)
	}
}

// hot sends n requests for "acme" through l, 10 ms apart on clk: a hot
// key, which leases.
func hot(t *testing.T, l *limiter.Limiter, clk *limitertest.Clock, n int) {
	t.Helper()
	for range n {
		if d, err := l.Allow(context.Background(), "acme", 1); err != nil || !d.Allowed {
			t.Fatalf("hot key: %+v, %v", d, err)
		}
		clk.Advance(10 * time.Millisecond)
	}
}

// TestThreeReplicasOneCustomerMonth: three replicas (a store each, one
// Redis, one prefix, the over-limit cache on) and a customer who spent
// 1,000 of a month of 1,000. A plan change on one replica keeps that
// usage; a deploy raising the limit on another keeps it; during the
// rolling deploy the replica still at 1,000 refuses past 1,000 while the
// one at 2,000 admits up to 2,000 in all; a Reset on one replica lets the
// customer through on the other two within a second, their caches
// refusing until then.
func TestThreeReplicasOneCustomerMonth(t *testing.T) {
	ctx := context.Background()
	clk := limitertest.New(t0)
	month := limiter.MustPolicy("plan", limiter.PerMonthIn(1000, time.UTC))
	prefix := testPrefix(t)
	var (
		stores [3]*Store
		ls     [3]*limiter.Limiter
		monos  [3]*atomic.Int64
	)
	for i := range stores {
		s, err := New(redistest.Client(t, redistest.SharedAddr), WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores[i], monos[i] = s, fakeMono(s)
		ls[i] = newLimiter(t, month, s, clk)
	}
	for i, cost := range []int64{334, 333, 333} {
		if d, err := ls[i].Allow(ctx, "acme", cost); err != nil || !d.Allowed {
			t.Fatalf("replica %d spends %d: %+v, %v", i+1, cost, d, err)
		}
	}
	for i, l := range ls {
		if d, _ := l.Allow(ctx, "acme", 1); d.Allowed {
			t.Fatalf("replica %d admitted past 1,000 of 1,000", i+1)
		}
	}
	// A plan change on replica 2: the same usage under 2,000.
	pro, err := ls[1].For(&limiter.Plan{Name: "pro", Limits: map[string][]int64{"plan": {2000}}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := pro.Allow(ctx, "acme", 1); err != nil || !d.Allowed || d.Remaining != 999 {
		t.Fatalf("after the plan change: %+v, %v; want admitted with 999 of 2,000 left", d, err)
	}
	// A deploy raising the limit on replica 3: its limiter made anew.
	if err := ls[2].Close(); err != nil {
		t.Fatal(err)
	}
	ls[2] = newLimiter(t, limiter.MustPolicy("plan", limiter.PerMonthIn(2000, time.UTC)), stores[2], clk)
	if d, err := ls[2].Allow(ctx, "acme", 1); err != nil || !d.Allowed || d.Remaining != 998 {
		t.Fatalf("after the deploy: %+v, %v; want admitted with 998 of 2,000 left", d, err)
	}
	// The rolling deploy: replica 1, still at 1,000, refuses; replica 3,
	// at 2,000, admits until 2,000 in all.
	if d, _ := ls[0].Allow(ctx, "acme", 1); d.Allowed {
		t.Fatal("replica 1, at 1,000, admitted at 1,002")
	}
	if d, err := ls[2].Allow(ctx, "acme", 998); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("replica 3 to 2,000: %+v, %v", d, err)
	}
	if d, _ := ls[2].Allow(ctx, "acme", 1); d.Allowed {
		t.Fatal("replica 3 admitted past 2,000")
	}
	u, err := ls[2].Usage(ctx, "acme")
	if err != nil || u.Windows[0].Used != 2000 {
		t.Fatalf("usage %+v, %v; want 2,000 used, one usage for both versions", u, err)
	}
	// Replicas 1 and 2 now refuse from their caches.
	for i := range 2 {
		cached := stores[i].Stats().Cached
		if d, _ := ls[i].Allow(ctx, "acme", 1); d.Allowed || stores[i].Stats().Cached != cached+1 {
			t.Fatalf("replica %d: %+v, want refused from its cache", i+1, d)
		}
	}
	if err := ls[2].Reset(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(maxLocalAge + time.Millisecond)
	for i := range 2 {
		monos[i].Add(int64(maxLocalAge + time.Millisecond))
		if d, err := ls[i].Allow(ctx, "acme", 1); err != nil || !d.Allowed {
			t.Fatalf("replica %d a second after replica 3's Reset: %+v, %v; want admitted", i+1, d, err)
		}
	}
}
