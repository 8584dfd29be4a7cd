package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

func TestWithLeasesValidates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		horizon time.Duration
		divisor int64
	}{
		{"negative_horizon", -time.Millisecond, 64},
		{"sub_millisecond_horizon", 1500 * time.Microsecond, 64},
		{"horizon_over_a_second", time.Second + time.Millisecond, 64},
		{"negative_divisor", 50 * time.Millisecond, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(sharedClient(t), WithLeases(tc.horizon, tc.divisor))
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New(WithLeases(%v, %d)): got %v, want ErrInvalidOption", tc.horizon, tc.divisor, err)
			}
		})
	}
	s, err := New(sharedClient(t), WithLeases(defaultLeaseHorizon, defaultLeaseDivisor))
	if err != nil {
		t.Fatalf("New(WithLeases(defaults)): %v", err)
	}
	s.Close()
	// Zero asks for each default.
	s, err = New(sharedClient(t), WithLeases(0, 0))
	if err != nil {
		t.Fatalf("New(WithLeases(0, 0)): %v", err)
	}
	defer s.Close()
	if got := s.cfg.lease; got.horizon != defaultLeaseHorizon || got.divisor != defaultLeaseDivisor {
		t.Fatalf("WithLeases(0, 0) = horizon %v, divisor %d; want the defaults %v, %d", got.horizon, got.divisor, defaultLeaseHorizon, defaultLeaseDivisor)
	}
}

// TestLeaseWantGrows checks the sizing rule on its own: nothing for a
// key's first request in its window, then the cost seen before over at
// least one horizon, times the horizon or the time left, capped.
func TestLeaseWantGrows(t *testing.T) {
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 64}, 64, false, new(keyCache))
	p := limiter.MustPolicy("want", limiter.PerSecond(6400)) // cap 100
	for _, tc := range []struct {
		name        string
		seen, since int64
		known       bool
		end, t      int64
		want        int64
	}{
		{"first_request_asks_nothing", 1, 0, false, 0, 0, 0},
		{"second_within_a_horizon", 2, 0, false, 0, 10, 1},
		{"tenth_within_a_horizon", 10, 0, true, 1000, 10, 9},
		{"slow_key_asks_nothing", 3, 0, true, 1000, 400, 0},
		{"steady_rate", 201, 0, true, 1000, 200, 50},
		{"capped", 100000, 0, true, 1000, 100, 100},
		{"shrinks_near_the_end", 201, 0, true, 1000, 990, 2},
		{"nothing_at_the_end", 201, 0, true, 1000, 1000, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &leaseEntry{seen: tc.seen, since: tc.since, known: tc.known, end: tc.end}
			if got := l.want(e, p, tc.t); got != tc.want {
				t.Fatalf("want(seen %d since %d end %d, t %d): got %d, want %d", tc.seen, tc.since, tc.end, tc.t, got, tc.want)
			}
		})
	}
}

// TestLeaseServerClockDatesInItsWindow: under serverClock a request
// that read the monotonic clock before the lease request it waited for
// is decided from that lease, and so in the lease's window: dated no
// earlier than the window's start, with the window's Remaining and reset.
// (Dated by its own early reading, it landed in the window before, where
// its lease's count looks empty: Remaining the whole limit, and CI's
// per-window tally one over.)
func TestLeaseServerClockDatesInItsWindow(t *testing.T) {
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 10}, 64, true, new(keyCache))
	var mono time.Duration
	l.mono = func() time.Duration { return mono }
	p := limiter.MustPolicy("dated", limiter.PerSecond(100)) // cap 10
	ctx := context.Background()
	req := limiter.Request{Key: "k", Policy: p, Cost: 1}
	// A request before, so the next asks for a lease.
	if _, tk, ok, err := l.take(ctx, &req, farDeadline); ok || err != nil || tk.want != 0 {
		t.Fatalf("first request: got ticket %+v ok %v, %v; want no lease asked for", tk, ok, err)
	}
	mono = time.Millisecond
	_, lender, ok, err := l.take(ctx, &req, farDeadline)
	if ok || err != nil || lender.want == 0 || lender.ch == nil {
		t.Fatalf("lease request: got ticket %+v ok %v, %v; want a lease asked for", lender, ok, err)
	}
	// Redis answered at the first millisecond of window 1796119235, with
	// 2 granted beside the request's own unit.
	const windowStart = 1796119235000
	r := &result{allowed: true, at: windowStart, granted: 2}
	r.counts[0] = 0
	// The waiter read the clock 1 ms before the lender.
	early := lender
	early.t, early.ch = 0, nil
	l.settle(&lender, &req, r, time.UnixMilli(windowStart), true)
	sh := l.shard("k")
	e := sh.m[entryKey(p, "k")]
	d, ok := l.spend(e, &req, early.t)
	if !ok {
		t.Fatal("waiter not decided from the lease")
	}
	if got := d.DecidedAt().UnixMilli(); got < windowStart {
		t.Fatalf("DecidedAt %d, before the lease's window starting at %d", got, windowStart)
	}
	if d.Remaining > 100-2 {
		t.Fatalf("Remaining %d, but the window has at most %d left", d.Remaining, 100-2)
	}
	if want := time.UnixMilli(windowStart + 1000); !d.ResetAt.Equal(want) {
		t.Fatalf("ResetAt %v, want the lease window's end %v", d.ResetAt, want)
	}
}

// TestLeaseDecidesLocally runs one hot key on one store: the lease grows
// from nothing, most decisions are then made without a round trip,
// exactly the limit is admitted, Remaining never claims more than the
// window has left, and a cold key's single request leases nothing.
func TestLeaseDecidesLocally(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			ctx := context.Background()
			c := sharedClient(t)
			s := newStore(t, c, WithLeases(50*time.Millisecond, 10), withClockSource(clock))
			p := limiter.MustPolicy("local", limiter.PerMinute(1000)) // cap 100
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			now := t0
			admitted := int64(0)
			for i := range 1200 {
				d, err := s.Take(ctx, limiter.Request{Key: "hot", Policy: p, Now: now, Cost: 1})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
					// Remaining is at most what is truly left: the limit
					// less everything admitted so far.
					if d.Remaining > 1000-admitted {
						t.Fatalf("decision %d: Remaining %d, but only %d left", i, d.Remaining, 1000-admitted)
					}
				} else if d.RetryAfter <= 0 {
					t.Fatalf("decision %d: refused with RetryAfter %v", i, d.RetryAfter)
				}
			}
			if admitted != 1000 && clock == appClock {
				t.Fatalf("admitted %d, want exactly the limit 1000", admitted)
			}
			if admitted > 1000 {
				t.Fatalf("admitted %d, over the limit 1000", admitted)
			}
			st := s.Stats()
			if st.Leased < 900 {
				t.Fatalf("Stats %+v: %d leased decisions of 1200, want most", st, st.Leased)
			}
			if st.RoundTrips > 60 {
				t.Fatalf("Stats %+v: %d round trips for 1200 decisions, want few", st, st.RoundTrips)
			}

			before := s.Stats()
			d, err := s.Take(ctx, limiter.Request{Key: "cold", Policy: p, Now: now, Cost: 1})
			if err != nil || !d.Allowed || d.Remaining != 999 {
				t.Fatalf("cold key: got %+v, %v; want admitted with 999 left", d, err)
			}
			if got := s.leases.held(p, "cold"); got != 0 {
				t.Fatalf("cold key holds %d after one request, want 0", got)
			}
			if after := s.Stats(); after.RoundTrips != before.RoundTrips+1 {
				t.Fatalf("cold key: %d round trips, want 1", after.RoundTrips-before.RoundTrips)
			}
		})
	}
}

// TestLeaseRespectsExistingCount: a lease is granted only from what is
// left after every other replica's charges, so a key near its limit gets
// a small lease, and a full key none.
func TestLeaseRespectsExistingCount(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
	prefix := testPrefix(t)
	p := limiter.MustPolicy("near", limiter.PerMinute(640)) // cap 10
	plain, err := New(c, WithPrefix(prefix), WithTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	leasing, err := New(c, WithPrefix(prefix), WithTimeout(5*time.Second), WithLeases(50*time.Millisecond, 64))
	if err != nil {
		t.Fatal(err)
	}
	defer leasing.Close()
	if _, err := plain.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 635}); err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for range 20 {
		d, err := leasing.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 5 {
		t.Fatalf("admitted %d after 635 of 640, want 5", admitted)
	}
	v, err := c.Get(ctx, keyOf(leasing, "k", p, 0, t0)).Int64()
	if err != nil || v != 640 {
		t.Fatalf("count in Redis: %d, %v; want 640", v, err)
	}
	if d, err := plain.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}); err != nil || d.Allowed {
		t.Fatalf("another replica after the lease: %+v, %v; want refused", d, err)
	}
}

// TestLeaseEndsWithItsWindow: units held when the window ends are not
// spent in the next one, which starts from a fresh count.
func TestLeaseEndsWithItsWindow(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
	s := newStore(t, c, WithLeases(50*time.Millisecond, 10))
	p := limiter.MustPolicy("ends", limiter.PerSecond(100)) // cap 10
	for range 10 {
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0.Add(900 * time.Millisecond), Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if s.leases.held(p, "k") == 0 {
		t.Fatal("no lease held after 10 requests in 1ms")
	}
	before := s.Stats()
	next := t0.Add(time.Second)
	d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: next, Cost: 1})
	if err != nil || !d.Allowed {
		t.Fatalf("next window: %+v, %v", d, err)
	}
	if s.Stats().Leased != before.Leased {
		t.Fatal("a lease of the old window decided in the new one")
	}
	v, err := c.Get(ctx, keyOf(s, "k", p, 0, next)).Int64()
	if err != nil || v != 1 {
		t.Fatalf("new window's count: %d, %v; want 1 (cold again: nothing leased)", v, err)
	}
}

// TestLeaseOneRequestInFlight: concurrent callers on one replica of a
// key that wants a lease send one lease request at a time; the others
// wait for it, then decide from it.
func TestLeaseOneRequestInFlight(t *testing.T) {
	ctx := context.Background()
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, proxy.Addr())
	s := newStore(t, c, WithLeases(50*time.Millisecond, 1), withPath(pathPlain))
	p := limiter.MustPolicy("inflight", limiter.PerMinute(1000)) // cap 1000
	for range 3 {                                                // warm: the next request wants a lease
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	proxy.SetDelay(50 * time.Millisecond)
	before := s.Stats()
	var wg sync.WaitGroup
	var admitted atomic.Int64
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1})
			if err != nil {
				t.Error(err)
			}
			if d.Allowed {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	after := s.Stats()
	if admitted.Load() != 16 {
		t.Fatalf("admitted %d of 16", admitted.Load())
	}
	// The first caller leases; the rest wait for it and spend the lease,
	// or, if it is too small, go to Redis themselves, asking for nothing.
	if rt := after.RoundTrips - before.RoundTrips; rt >= 16 {
		t.Fatalf("%d round trips for 16 callers: waiting for the lease in flight did not happen", rt)
	}
}

// TestLeaseWaitWithinTimeout: with Redis slower than the timeout, a
// caller waiting for another's lease request waits no longer than its
// own timeout in all: every decision ends at the timeout. Before, a waiter waited a whole timeout for the lease
// request, then went to Redis with a fresh one: 201 ms at p50 and p99.
func TestLeaseWaitWithinTimeout(t *testing.T) {
	const timeout = 100 * time.Millisecond
	ctx := context.Background()
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, proxy.Addr())
	s := newStore(t, c, WithLeases(50*time.Millisecond, 1), WithTimeout(timeout), WithBreaker(1<<20, time.Second))
	p := limiter.MustPolicy("slowlease", limiter.PerMinute(100000))
	for range 3 { // warm: the next request wants a lease
		if _, err := s.Take(ctx, limiter.Request{Key: "hot", Policy: p, Now: t0, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	proxy.SetDelay(400 * time.Millisecond)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		took []time.Duration
	)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				began := time.Now()
				_, err := s.Take(ctx, limiter.Request{Key: "hot", Policy: p, Now: t0, Cost: 1})
				d := time.Since(began)
				if err == nil {
					t.Error("Redis 400 ms late, timeout 100 ms: a decision, want an error")
				}
				mu.Lock()
				took = append(took, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(took)
	p50, p99 := took[len(took)/2], took[len(took)*99/100]
	t.Logf("%d decisions: p50 %v, p99 %v, max %v", len(took), p50, p99, took[len(took)-1])
	// On a quiet machine p99 is within 5 ms of the timeout (101-105 ms);
	// the bound leaves a loaded one 20 ms, and tells one timeout from the
	// two waited before (201 ms).
	if p50 > timeout+10*time.Millisecond || p99 > timeout+20*time.Millisecond {
		t.Fatalf("p50 %v, p99 %v; want p50 within the timeout %v + 10 ms, p99 within it + 20 ms", p50, p99, timeout)
	}
}

// TestLeaseOutlivesRedis: a lease in hand keeps deciding while Redis is
// unreachable, until its window ends; then the failure policy answers.
func TestLeaseOutlivesRedis(t *testing.T) {
	ctx := context.Background()
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, proxy.Addr())
	s := newStore(t, c, WithLeases(50*time.Millisecond, 4), WithTimeout(100*time.Millisecond))
	p := limiter.MustPolicy("outage", limiter.PerSecond(400)) // cap 100
	at := t0.Add(100 * time.Millisecond)
	for range 20 {
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: at, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	held := s.leases.held(p, "k")
	if held < 5 {
		t.Fatalf("held %d after 20 requests, want a lease", held)
	}
	proxy.Close() // Redis is away
	for i := range held {
		d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: at.Add(time.Duration(i) * time.Millisecond), Cost: 1})
		if err != nil || !d.Allowed {
			t.Fatalf("leased decision %d of %d with Redis away: %+v, %v", i, held, d, err)
		}
	}
	if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: at, Cost: 1}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("lease spent, Redis away: got %v, want ErrUnavailable (FailClosed)", err)
	}
}

// TestLeaseOutlivesRedisUntilWindowEnds: a lease stops deciding at its
// window's end even with units left, and FailClosed answers.
func TestLeaseOutlivesRedisUntilWindowEnds(t *testing.T) {
	ctx := context.Background()
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, proxy.Addr())
	s := newStore(t, c, WithLeases(50*time.Millisecond, 4), WithTimeout(100*time.Millisecond))
	p := limiter.MustPolicy("outage", limiter.PerSecond(400))
	at := t0.Add(100 * time.Millisecond)
	for range 20 {
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: at, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if s.leases.held(p, "k") < 2 {
		t.Fatal("no lease")
	}
	proxy.Close()
	if d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: at.Add(800 * time.Millisecond), Cost: 1}); err != nil || !d.Allowed {
		t.Fatalf("within the window: %+v, %v; want admitted from the lease", d, err)
	}
	if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0.Add(time.Second), Cost: 1}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("next window, Redis away: got %v, want ErrUnavailable", err)
	}
}

// replicaSet is R replicas of one service: separate clients, stores and
// limiters on one Redis (or Cluster), one fake clock.
type replicaSet struct {
	ls     []*limiter.Limiter
	stores []*Store
	clk    *limitertest.Clock
}

func newReplicaSet(t *testing.T, r int, p *limiter.Policy, client func() redis.UniversalClient, opts ...Option) *replicaSet {
	t.Helper()
	rs := &replicaSet{clk: limitertest.New(t0)}
	prefix := testPrefix(t)
	for range r {
		s, err := New(client(), append([]Option{WithPrefix(prefix), WithTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		rs.stores = append(rs.stores, s)
		rs.ls = append(rs.ls, newLimiter(t, p, s, rs.clk))
	}
	return rs
}

// window runs callers goroutines per replica, each making calls Allow
// calls on key at the clock's instant, and returns how many were
// admitted.
func (rs *replicaSet) window(t *testing.T, key string, callers, calls int) int64 {
	t.Helper()
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for _, l := range rs.ls {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					d, err := l.Allow(context.Background(), key, 1)
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	return admitted.Load()
}

// TestLeasesExactAcrossReplicas runs 4 replicas, each with 8 concurrent
// callers, over many windows of a fake application clock, on one Redis
// and on a three-master Cluster: in every window the replicas together
// admit at most the limit, exactly, and, being hungry (demand 2.5 times
// the limit), at least the limit less 4 leases' cap. A layered policy is
// held to both of its limits.
func TestLeasesExactAcrossReplicas(t *testing.T) {
	const (
		replicas = 4
		callers  = 8
		limit    = 320
		divisor  = 16 // cap = 20
		leaseCap = limit / divisor
		windows  = 12
	)
	backends := []struct {
		name string
		// setup readies the backend for the test and returns a maker of
		// clients for one subtest.
		setup func(t *testing.T) func(t *testing.T) redis.UniversalClient
		path  path // pathByClient: the client's own (Batch on one node, per slot on a Cluster)
	}{
		{"single_node", func(*testing.T) func(t *testing.T) redis.UniversalClient {
			return func(t *testing.T) redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) }
		}, pathByClient},
		{"single_node_plain", func(*testing.T) func(t *testing.T) redis.UniversalClient {
			return func(t *testing.T) redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) }
		}, pathPlain},
		{"cluster", func(t *testing.T) func(t *testing.T) redis.UniversalClient {
			cl := redistest.SharedCluster(t)
			return func(t *testing.T) redis.UniversalClient { return cl.Client(t) }
		}, pathByClient},
	}
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			client := be.setup(t)
			// Demand 2.5 times the limit drains every lease; 1.25 times
			// leaves replicas whose callers stop while they hold units.
			for _, demand := range []struct {
				name  string
				calls int // per caller per window
			}{{"demand_2.5x", limit * 5 / (2 * replicas * callers)}, {"demand_1.25x", limit * 5 / (4 * replicas * callers)}} {
				t.Run("one_window/"+demand.name, func(t *testing.T) {
					p := limiter.MustPolicy("exact", limiter.PerSecond(limit))
					rs := newReplicaSet(t, replicas, p, func() redis.UniversalClient { return client(t) }, WithLeases(50*time.Millisecond, divisor), withPath(be.path))
					lo, hi := int64(limit), int64(0)
					for w := range windows {
						key := "hot-" + strconv.Itoa(w%3)
						got := rs.window(t, key, callers, demand.calls)
						if got > limit || got < limit-replicas*leaseCap {
							t.Fatalf("window %d: admitted %d, want in [%d, %d]", w, got, limit-replicas*leaseCap, limit)
						}
						lo, hi = min(lo, got), max(hi, got)
						rs.clk.Advance(time.Second)
					}
					var leased, trips uint64
					for _, s := range rs.stores {
						leased += s.Stats().Leased
						trips += s.Stats().RoundTrips
					}
					if leased == 0 {
						t.Fatal("no decision was made from a lease")
					}
					t.Logf("admitted per window in [%d, %d] of %d; %d decisions leased, %d round trips", lo, hi, limit, leased, trips)
				})
			}
			t.Run("layered", func(t *testing.T) {
				// 320/s and 1000 per 5s: the long window binds in the
				// fourth second of each of its windows.
				const long = 1000
				p := limiter.MustPolicy("layered", limiter.PerSecond(limit), limiter.Rate{Limit: long, Window: 5 * time.Second})
				rs := newReplicaSet(t, replicas, p, func() redis.UniversalClient { return client(t) }, WithLeases(50*time.Millisecond, divisor), withPath(be.path))
				var inLong int64
				for w := range 2 * 5 {
					got := rs.window(t, "hot", callers, limit*5/(2*replicas*callers))
					if got > limit {
						t.Fatalf("second %d: admitted %d, over %d", w, got, limit)
					}
					inLong += got
					if inLong > long {
						t.Fatalf("second %d: %d admitted in the 5s window, over %d", w, inLong, long)
					}
					rs.clk.Advance(time.Second)
					if (w+1)%5 == 0 {
						// Each second may strand R leases in the long window.
						if min := long - 5*replicas*leaseCap; inLong < int64(min) {
							t.Fatalf("5s window ending at second %d: admitted %d, want ≥ %d", w, inLong, min)
						}
						inLong = 0
					}
				}
			})
		})
	}
}

// TestLeaseTableBounded: however many keys pass, the table holds at most
// its size, dropping entries that hold nothing when their windows have
// not ended; a key that holds a lease is kept.
func TestLeaseTableBounded(t *testing.T) {
	const size = 64 * 4
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 1}, size, false, new(keyCache))
	p := limiter.MustPolicy("bounded", limiter.PerHour(1000))
	req := limiter.Request{Key: "hot", Policy: p, Now: t0, Cost: 1}
	for range 2 { // the second asks for a lease
		_, tk, _, _ := l.take(context.Background(), &req, farDeadline)
		l.settle(&tk, &req, &result{allowed: true, granted: tk.want}, t0, true)
	}
	held := l.held(p, "hot")
	if held == 0 {
		t.Fatal("no lease held after 2 requests")
	}
	for i := range 100000 {
		r := limiter.Request{Key: "cold-" + strconv.Itoa(i), Policy: p, Now: t0, Cost: 1}
		_, tk, _, _ := l.take(context.Background(), &r, farDeadline)
		l.settle(&tk, &r, &result{allowed: true}, t0, true)
	}
	n := 0
	for i := range l.shards {
		n += len(l.shards[i].m)
	}
	if n > size {
		t.Fatalf("table holds %d entries, want at most %d", n, size)
	}
	if got := l.held(p, "hot"); got != held {
		t.Fatalf("hot key holds %d after 100,000 cold keys, want %d", got, held)
	}
}

// TestLeaseReset: Reset drops what this replica holds, and a grant from
// a script that ran before the Reset is not held after it (its units
// were charged to counts Reset deleted).
func TestLeaseReset(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, sharedClient(t), WithLeases(50*time.Millisecond, 1))
	p := limiter.MustPolicy("reset", limiter.PerHour(100))
	for range 5 {
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if s.leases.held(p, "k") == 0 {
		t.Fatal("no lease held")
	}
	req := limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}
	_, tk, _, _ := s.leases.take(ctx, &req, farDeadline) // a request sets out...
	if err := s.Reset(ctx, "k", p, t0); err != nil {
		t.Fatal(err)
	}
	if got := s.leases.held(p, "k"); got != 0 {
		t.Fatalf("held %d after Reset, want 0", got)
	}
	s.leases.take(ctx, &req, farDeadline)                                     // ...the key is seen again...
	s.leases.settle(&tk, &req, &result{allowed: true, granted: 50}, t0, true) // ...and its grant lands
	if got := s.leases.held(p, "k"); got != 0 {
		t.Fatalf("held %d from a grant made before Reset, want 0", got)
	}
}

// BenchmarkLeasedDecision measures a decision made from a lease, the
// path every hot-key decision but a few takes: no allocation.
func BenchmarkLeasedDecision(b *testing.B) {
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 1}, defaultLeaseKeys, false, new(keyCache))
	p := limiter.MustPolicy("bench", limiter.PerHour(1<<30), limiter.PerSecond(1<<40))
	req := limiter.Request{Key: "hot", Policy: p, Now: t0, Cost: 1}
	for range 2 {
		_, tk, _, _ := l.take(context.Background(), &req, farDeadline)
		l.settle(&tk, &req, &result{allowed: true, granted: 1 << 29}, t0, true)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		r := req
		for pb.Next() {
			if _, _, ok, _ := l.take(ctx, &r, farDeadline); !ok {
				b.Error("not decided from the lease")
				return
			}
		}
	})
}

// BenchmarkLeaseColdKeys measures what leasing adds to a decision on a
// cold key, which still goes to Redis: the table's bookkeeping before
// and after the round trip, over 10,000 keys.
func BenchmarkLeaseColdKeys(b *testing.B) {
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 64}, defaultLeaseKeys, false, new(keyCache))
	p := limiter.MustPolicy("bench", limiter.PerHour(1<<30))
	reqs := make([]limiter.Request, 10000)
	for i := range reqs {
		reqs[i] = limiter.Request{Key: "k" + strconv.Itoa(i), Policy: p, Now: t0, Cost: 1}
	}
	b.ReportAllocs()
	ctx := context.Background()
	for i := 0; b.Loop(); i++ {
		r := &reqs[i%len(reqs)]
		r.Now = t0.Add(time.Duration(i) * time.Millisecond) // a few per key per second
		_, tk, _, _ := l.take(ctx, r, farDeadline)
		l.settle(&tk, r, &result{allowed: true}, r.Now, true)
	}
}

// TestLeaseHonestHeaders: with two leasing replicas taking turns on one
// key, no decision's Remaining exceeds what is truly left (the limit less
// everything admitted by either), a refusal's RetryAfter points at the
// aligned end of the window, and once the key is out both replicas
// refuse from their over-limit caches, with no round trip.
func TestLeaseHonestHeaders(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("headers", limiter.PerMinute(600), limiter.PerSecond(400))
	prefix := testPrefix(t)
	var stores []*Store
	for range 2 {
		s, err := New(redistest.Client(t, redistest.SharedAddr), WithPrefix(prefix), WithTimeout(5*time.Second),
			WithLeases(50*time.Millisecond, 20))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	var admitted [2]int64 // in the minute, in the second
	now := t0.Add(1500 * time.Millisecond)
	for i := range 1000 {
		if i == 500 {
			now = now.Add(time.Second) // a fresh second: the minute binds
			admitted[1] = 0
		}
		d, err := stores[i%2].Take(ctx, limiter.Request{Key: "k", Policy: p, Now: now, Cost: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted[0]++
			admitted[1]++
			for w := range d.NumWindows() {
				ws := d.WindowAt(w)
				if left := ws.Limit - admitted[w]; ws.Remaining > left {
					t.Fatalf("decision %d: window %v Remaining %d, but only %d left", i, ws.Window, ws.Remaining, left)
				}
			}
			continue
		}
		end := now.Truncate(d.Window).Add(d.Window)
		if got, want := d.RetryAfter, end.Sub(now); got != want {
			t.Fatalf("decision %d: RetryAfter %v, want %v (the aligned end of the %v window)", i, got, want, d.Window)
		}
	}
	// Turns alternate, so the replica holding a lease when the other is
	// refused spends it: nothing is stranded, and the minute admits
	// exactly its limit (400 in the first second, 200 in the next).
	if admitted[0] != 600 {
		t.Fatalf("admitted %d in the minute, want exactly 600", admitted[0])
	}
	for _, s := range stores {
		before := s.Stats()
		d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: now, Cost: 1})
		if err != nil || d.Allowed {
			t.Fatalf("out of budget: %+v, %v; want refused", d, err)
		}
		if after := s.Stats(); after.Cached != before.Cached+1 || after.RoundTrips != before.RoundTrips {
			t.Fatalf("out of budget: stats %+v then %+v; want one cached refusal, no round trip", before, after)
		}
	}
}

// TestLeasesExactServerClock runs 4 leasing replicas under serverClock,
// on Redis's own clock, for about 2.5 seconds of 1-second windows: each
// window, as told by the decisions' DecidedAt (Redis's time, or for a
// leased decision Redis's time estimated on the monotonic clock), admits
// at most the limit, and the windows run through whole admit at least
// the limit less 4 caps.
func TestLeasesExactServerClock(t *testing.T) {
	const (
		replicas = 4
		callers  = 4
		limit    = 200
		divisor  = 16 // cap 12
	)
	p := limiter.MustPolicy("server", limiter.PerSecond(limit))
	var stores []*Store
	prefix := testPrefix(t)
	for range replicas {
		s, err := New(redistest.Client(t, redistest.SharedAddr), WithPrefix(prefix), WithTimeout(5*time.Second),
			withClockSource(serverClock), WithLeases(50*time.Millisecond, divisor))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	var (
		mu       sync.Mutex
		byWindow = map[int64]int64{}
		wg       sync.WaitGroup
	)
	stop := time.Now().Add(2500 * time.Millisecond)
	for _, s := range stores {
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					d, err := s.Take(context.Background(), limiter.Request{Key: "k", Policy: p, Now: time.Now(), Cost: 1})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						mu.Lock()
						byWindow[d.DecidedAt().UnixMilli()/1000]++
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	first, last := int64(1<<62), int64(0)
	for w := range byWindow {
		first, last = min(first, w), max(last, w)
	}
	for w, n := range byWindow {
		if n > limit {
			t.Errorf("window %d: admitted %d, over the limit %d", w, n, limit)
		}
		if w != first && w != last && n < limit-replicas*(limit/divisor) {
			t.Errorf("window %d (run through whole): admitted %d, want ≥ %d", w, n, limit-replicas*(limit/divisor))
		}
	}
	var leased uint64
	for _, s := range stores {
		leased += s.Stats().Leased
	}
	t.Logf("admitted per window %v; %d leased decisions", byWindow, leased)
	if leased == 0 {
		t.Fatal("no decision made from a lease")
	}
}

// held returns the units this replica holds for key under p, in a test.
func (l *leases) held(p *limiter.Policy, key string) int64 {
	if l == nil {
		return 0
	}
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[entryKey(p, key)]; e != nil {
		return e.held
	}
	return 0
}

// TestLeaseServerClockDatesNeverLate: under serverClock a lease's
// decisions are dated no later than Redis's clock could read at their
// instant, and never past the windows their units were charged in. Two
// grants in one window: the first's round trip took 100 ms (Redis read
// W+900 between local 100 and 200 ms), the second's 10 ms (W+950 between
// 205 and 215 ms), so at local t Redis reads between t+W+735 and
// t+W+745. (Before, decisions were dated by the first grant's request
// time, t+W+800, ahead of Redis by up to the trip there: a decision made
// before another replica's Reset was dated after it, and its refund
// returned into the fresh count; and with the span's end set by the
// second grant, a request near its end was dated in the next window,
// where its count looked empty: one over that window's limit by
// DecidedAt, as TestLeasesExactServerClock saw now and then under load.)
func TestLeaseServerClockDatesNeverLate(t *testing.T) {
	l := newLeases(leaseConfig{on: true, horizon: 50 * time.Millisecond, divisor: 10}, 64, true, new(keyCache))
	var mono time.Duration
	l.mono = func() time.Duration { return mono }
	p := limiter.MustPolicy("offset", limiter.PerSecond(100)) // cap 10
	ctx := context.Background()
	req := limiter.Request{Key: "k", Policy: p, Cost: 1}
	mono = 90 * time.Millisecond
	if _, tk, ok, err := l.take(ctx, &req, farDeadline); ok || err != nil || tk.want != 0 {
		t.Fatalf("first request: got ticket %+v ok %v, %v; want no lease asked for", tk, ok, err)
	}
	mono = 100 * time.Millisecond
	_, lender, ok, err := l.take(ctx, &req, farDeadline)
	if ok || err != nil || lender.want == 0 || lender.ch == nil {
		t.Fatalf("lease request: got ticket %+v ok %v, %v; want a lease asked for", lender, ok, err)
	}
	const w = 1796119235000 // the window's start, Redis's ms
	mono = 200 * time.Millisecond
	l.settle(&lender, &req, &result{allowed: true, at: w + 900, granted: 5}, time.UnixMilli(w+900), true)
	sh := l.shard("k")
	e := sh.m[entryKey(p, "k")]
	again := leaseTicket{t: 205, epoch: sh.epoch.Load()}
	r2 := &result{allowed: true, at: w + 950, granted: 5}
	r2.counts[0] = 6
	mono = 215 * time.Millisecond
	l.settle(&again, &req, r2, time.UnixMilli(w+950), true)
	decided := 0
	for ms := int64(215); ms < 300; ms += 5 {
		d, ok := l.spend(e, &req, ms)
		if !ok {
			continue
		}
		decided++
		got := d.DecidedAt().UnixMilli()
		if got >= w+1000 {
			t.Fatalf("at local %d ms: decided from the lease of window [%d, %d) but dated %d, in the next window", ms, w, w+1000, got)
		}
		if got > ms+w+735 {
			t.Fatalf("at local %d ms: dated %d, after Redis's clock could read (%d at the earliest)", ms, got, ms+w+735)
		}
	}
	if decided == 0 {
		t.Fatal("no request decided from the lease")
	}
}
