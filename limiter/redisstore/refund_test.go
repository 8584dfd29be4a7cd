package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestRefund: on every kind of client and under both clocks, a refund
// returns its cost to the windows that charged, so the next request is
// admitted; a refund larger than the count takes it to zero, never
// below; two replicas share the refunded budget; a refusal refunds
// nothing. Under appClock a refund after the window's end refunds nothing
// (serverClock's boundary is Redis's own: TestRefundServerClockEndedWindow).
func TestRefund(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	ring, _ := startRing(t, 2, time.Second)
	clients := []struct {
		name string
		c    func(t *testing.T) redis.UniversalClient
	}{
		{"single", func(t *testing.T) redis.UniversalClient { return sharedClient(t) }},
		{"cluster", func(t *testing.T) redis.UniversalClient { return cl.Client(t) }},
		{"ring", func(t *testing.T) redis.UniversalClient { return ring }},
	}
	for _, kind := range clients {
		for _, clock := range []clockSource{appClock, serverClock} {
			t.Run(kind.name+"_"+clock.String(), func(t *testing.T) {
				p := limiter.MustPolicy("refund", limiter.PerMinute(3), limiter.PerHour(100))
				prefix := testPrefix(t)
				clk := limitertest.New(t0.Add(10 * time.Second))
				var ls []*limiter.Limiter
				for range 2 { // two replicas
					s := newStore(t, kind.c(t), WithPrefix(prefix), withClockSource(clock))
					ls = append(ls, newLimiter(t, p, s, clk))
				}
				if clock == serverClock {
					awaitServerWindow(t, kind.c(t), time.Minute)
				}
				var last limiter.Decision
				for i := range 3 {
					d, err := ls[i%2].Allow(ctx, "k", 1)
					if err != nil || !d.Allowed {
						t.Fatalf("request %d: %+v, %v; want admitted", i, d, err)
					}
					last = d
				}
				refused, err := ls[0].Allow(ctx, "k", 1)
				if err != nil || refused.Allowed {
					t.Fatalf("4th request: %+v, %v; want refused", refused, err)
				}
				if err := ls[0].Refund(ctx, "k", 1, refused); err != nil {
					t.Fatalf("refund of a refusal: %v", err)
				}
				if d, _ := ls[1].Allow(ctx, "k", 1); d.Allowed {
					t.Fatalf("a refused request's refund freed a unit: %+v", d)
				}
				// Replica 0 refunds what replica 1 charged: replica 1,
				// whose over-limit cache knows the window full, is not
				// asked; replica 0 is, and Redis admits.
				if err := ls[0].Refund(ctx, "k", 1, last); err != nil {
					t.Fatal(err)
				}
				if d, err := ls[0].Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Fatalf("after a refund: %+v, %v; want admitted", d, err)
				}
				if d, _ := ls[0].Allow(ctx, "k", 1); d.Allowed {
					t.Fatalf("the refunded unit spent, still admitted: %+v", d)
				}
				// A refund of more than the count takes it to zero.
				if err := ls[0].Refund(ctx, "k", 10, last); err != nil {
					t.Fatal(err)
				}
				d, err := ls[0].Peek(ctx, "k", 1)
				if err != nil || !d.Allowed || d.Remaining != 2 {
					t.Fatalf("after refunding 10 of 3: %+v, %v; want the minute's budget whole (remaining 2 after 1)", d, err)
				}
				if w := d.WindowAt(1); w.Remaining != 100-1 {
					t.Fatalf("hour window after refunding 10 of 4: remaining %d, want %d (counts never below zero)", w.Remaining, 100-1)
				}
				if clock == appClock {
					// Charged in this minute, refunded in the next: only
					// the hour's window, still current, gets it back.
					charged, _ := ls[0].Allow(ctx, "k", 1)
					clk.Advance(time.Minute)
					if err := ls[0].Refund(ctx, "k", 1, charged); err != nil {
						t.Fatal(err)
					}
					d, _ := ls[0].Peek(ctx, "k", 1)
					if d.WindowAt(0).Remaining != 2 || d.WindowAt(1).Remaining != 100-1 {
						t.Fatalf("refund across the minute's boundary: %+v; want the new minute untouched (2 left after 1), the hour refunded (99)", []limiter.WindowStatus{d.WindowAt(0), d.WindowAt(1)})
					}
				}
			})
		}
	}
}

// TestRefundServerClockEndedWindow: under serverClock a window whose id
// Redis's TIME has left behind gets nothing back, though the key still
// holds its count (within the expiry margin).
func TestRefundServerClockEndedWindow(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
	s := newStore(t, c, withClockSource(serverClock))
	p := limiter.MustPolicy("refund-ended", limiter.PerSecond(3))
	l := newLimiter(t, p, s, limitertest.New(t0))
	awaitServerWindow(t, c, time.Second)
	d, err := l.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed {
		t.Fatal(d, err)
	}
	// Until Redis's second has moved on.
	awaitServerTime(t, c, nextServerWindow(d.DecidedAt(), time.Second))
	key := keyOf(s, "k", p, 0, t0)
	before, err := storedCount(ctx, c, key, serverClock)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refund(ctx, "k", 1, d); err != nil {
		t.Fatal(err)
	}
	if after, _ := storedCount(ctx, c, key, serverClock); after != before {
		t.Fatalf("count %s → %s: a refund lent budget to an ended window", before, after)
	}
}

// TestRefundLostReplyAppliedOnce: a refund whose reply is lost after Redis
// ran it (the proxy drops the reply and the connection) is an error, and
// is never sent again by the client's retries (go-redis's default 3):
// each refund takes the count down by at most its cost.
func TestRefundLostReplyAppliedOnce(t *testing.T) {
	ctx := context.Background()
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, proxy.Addr())
	if c.Options().MaxRetries != 3 {
		t.Fatalf("client MaxRetries %d, want go-redis's default 3", c.Options().MaxRetries)
	}
	s := newStore(t, c, WithOverLimitCache(0), WithTimeout(2*time.Second))
	p := limiter.MustPolicy("refund-lost", limiter.PerHour(100))
	l := newLimiter(t, p, s, limitertest.New(t0))
	shared := sharedClient(t)
	count := func() int64 {
		n, err := shared.Get(ctx, keyOf(s, "k", p, 0, t0)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	var d limiter.Decision
	for range 20 {
		d, _ = l.Allow(ctx, "k", 1)
	}
	lost := 0
	for range 6 {
		before := count()
		proxy.DropReplies(1)
		err := l.Refund(ctx, "k", 1, d)
		after := count()
		if after < before-1 {
			t.Fatalf("one refund of 1 took the count from %d to %d: sent again", before, after)
		}
		if err != nil && after == before-1 {
			lost++ // Redis ran it, the reply was lost: not sent again
		}
	}
	if lost == 0 {
		t.Fatal("no refund lost its reply after Redis ran it: the test proved nothing")
	}
}

// TestRefundToLease: with leases, a refund of a charge spent from this
// replica's lease goes back to the lease, with no round trip, at most
// what was spent from it since its latest grant (of a decision made
// after that grant's millisecond: a Reset, this replica's or another's,
// may have come before); the rest goes to Redis. Under both
// clocks, with two replicas, the window still admits no more than its
// limit in all.
func TestRefundToLease(t *testing.T) {
	ctx := context.Background()
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			c := sharedClient(t)
			p := limiter.MustPolicy("refund-lease", limiter.PerMinute(200))
			prefix := testPrefix(t)
			clk := limitertest.New(t0.Add(10 * time.Second))
			var (
				ss []*Store
				ls []*limiter.Limiter
			)
			for range 2 {
				s := newStore(t, c, WithPrefix(prefix), withClockSource(clock), WithLeases(time.Second, 4), WithOverLimitCache(0))
				ss, ls = append(ss, s), append(ls, newLimiter(t, p, s, clk))
			}
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			// Demand enough for a lease: 20 requests, then more until
			// one leaves units held (the 20th may spend the last of a
			// lease whose size followed the demand's timing).
			var (
				last      limiter.Decision
				held      int64
				n         int
				fromLease bool
			)
			// Until the last request was decided from the lease: a lease
			// takes back only what was decided after its latest grant's
			// millisecond, so the clocks move a millisecond a request.
			for n < 20 || (held == 0 || !fromLease) && n < 100 {
				trips := ss[0].Stats().RoundTrips
				d, err := ls[0].Allow(ctx, "hot", 1)
				if err != nil || !d.Allowed {
					t.Fatal(d, err)
				}
				last, n = d, n+1
				held, fromLease = ss[0].leases.held(p, "hot"), ss[0].Stats().RoundTrips == trips
				clk.Advance(time.Millisecond)
				if clock == serverClock {
					time.Sleep(time.Millisecond)
				}
			}
			if held == 0 || !fromLease || ss[0].Stats().Leased == 0 {
				t.Fatalf("no lease held after %d requests: %+v", n, ss[0].Stats())
			}
			trips := ss[0].Stats().RoundTrips
			if err := ls[0].Refund(ctx, "hot", 1, last); err != nil {
				t.Fatal(err)
			}
			if got := ss[0].leases.held(p, "hot"); got != held+1 || ss[0].Stats().RoundTrips != trips {
				t.Fatalf("refund of a leased unit: held %d → %d, round trips %d → %d; want +1, none", held, got, trips, ss[0].Stats().RoundTrips)
			}
			// Spend everything, on both replicas, refunding as we go: the
			// window admits the limit, never more.
			admitted := n - 1 // one refunded above
			for i := 0; i < 1000; i++ {
				d, err := ls[i%2].Allow(ctx, "hot", 1)
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed {
					continue
				}
				admitted++
				if i%10 == 0 {
					if err := ls[i%2].Refund(ctx, "hot", 1, d); err != nil {
						t.Fatal(err)
					}
					admitted--
				}
			}
			if admitted > 200 {
				t.Fatalf("%d charges stand after refunds, over the limit of 200", admitted)
			}
			if admitted < 200-2*4*50 { // each replica may strand at most a lease (cap 200/4)
				t.Fatalf("%d charges stand, far below the limit: refunds lost", admitted)
			}
		})
	}
}

// TestRefundFailLocal: a decision FailLocal made while Redis was away is
// refunded to the in-memory fallback that charged it; one FailOpen
// admitted was charged to nothing and refunds nothing, Redis away or not.
func TestRefundFailLocal(t *testing.T) {
	ctx := context.Background()
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, DialTimeout: 50 * time.Millisecond})
	t.Cleanup(func() { down.Close() })
	p := limiter.MustPolicy("refund-local", limiter.PerMinute(4))
	// Divisor 1 too: the fallback's policy then has the limits, and the
	// id, of Redis's, and its decisions must still be told apart.
	for _, div := range []int{2, 1} {
		s := newStore(t, down, WithFailLocal(div), WithTimeout(100*time.Millisecond))
		l := newLimiter(t, p, s, limitertest.New(t0))
		var last limiter.Decision
		for i := range 4 / div { // the fallback's limit
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("divisor %d, request %d: %+v, %v", div, i, d, err)
			}
			last = d
		}
		if d, _ := l.Allow(ctx, "k", 1); d.Allowed {
			t.Fatalf("divisor %d: over the fallback's limit: %+v", div, d)
		}
		if err := l.Refund(ctx, "k", 1, last); err != nil {
			t.Fatalf("divisor %d: refund to the fallback: %v", div, err)
		}
		if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
			t.Fatalf("divisor %d: after the refund: %+v, %v; want admitted by the fallback", div, d, err)
		}
	}

	open := newStore(t, down, WithFailOpen(), WithTimeout(100*time.Millisecond))
	lo := newLimiter(t, p, open, limitertest.New(t0))
	d, err := lo.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed {
		t.Fatalf("FailOpen: %+v, %v", d, err)
	}
	if err := lo.Refund(ctx, "k", 1, d); err != nil {
		t.Fatalf("refund of a FailOpen admission: %v, want nothing to do", err)
	}
}

// TestRefundWhileALeaseIsAskedGoesToRedis: a refund of a unit spent from
// the lease, made while this replica's next lease request is in flight,
// goes to Redis, not back into the lease. Taken back into it, it sat
// beside the grant that then arrived: the replica held more than a cap
// plus a request's cost less one, the most docs/leases.md promises it
// strands, and the most it spends after another replica's Reset (the
// history checker's redis-leases-serverclock found 9 units spent where
// 8 is the bound).
func TestRefundWhileALeaseIsAskedGoesToRedis(t *testing.T) {
	ctx := context.Background()
	c := redistest.Client(t, redistest.Shared(t).Options().Addr)
	h := &armedHold{held: make(chan struct{}), hold: make(chan struct{})}
	c.AddHook(h)
	s := newStore(t, c, WithPrefix(testPrefix(t)), WithLeases(50*time.Millisecond, 25), WithOverLimitCache(0))
	p := limiter.MustPolicy("grant-refund", limiter.PerHour(100)) // cap 4
	const cap = 4
	req := limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}
	// Until a grant of a whole cap is spent: the last decision came
	// from the lease and left it empty. The clock moves a millisecond a
	// request (a lease takes back only what was decided after its latest
	// grant's millisecond).
	var last limiter.Decision
	for n := 0; ; n++ {
		if n == 100 {
			t.Fatal("no lease of a whole cap spent in 100 requests")
		}
		trips := s.Stats().RoundTrips
		d, err := s.Take(ctx, req)
		if err != nil || !d.Allowed {
			t.Fatal(d, err)
		}
		fromLease := s.Stats().RoundTrips == trips
		req.Now = req.Now.Add(time.Millisecond)
		if fromLease && n >= 2*cap && s.leases.held(p, "k") == 0 {
			last = d
			break
		}
	}
	// The next request asks for a lease; its script is held.
	h.armed.Store(true)
	done := make(chan error, 1)
	go func() {
		d, err := s.Take(ctx, req)
		if err == nil && !d.Allowed {
			err = fmt.Errorf("refused: %+v", d)
		}
		done <- err
	}()
	<-h.held
	trips := s.Stats().RoundTrips
	if err := s.Refund(ctx, req, last); err != nil {
		t.Fatal(err)
	}
	refunded := s.Stats().RoundTrips - trips
	close(h.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := s.leases.held(p, "k"); refunded != 1 || got > cap {
		t.Fatalf("refund during a lease request: %d round trips, want 1; held %d after the grant, want at most the cap %d", refunded, got, cap)
	}
}

// armedHold holds the next take.lua call once armed, until hold is
// closed, closing held when it comes.
type armedHold struct {
	armed      atomic.Bool
	held, hold chan struct{}
}

func (*armedHold) DialHook(next redis.DialHook) redis.DialHook { return next }

func (*armedHold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *armedHold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if runs(cmd, takeHash, takeSource) && h.armed.CompareAndSwap(true, false) {
			close(h.held)
			<-h.hold
		}
		return next(ctx, cmd)
	}
}
