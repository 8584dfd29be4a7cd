package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// TestNothingOutlivesClose: a decision whose reply is late (Redis 1 s
// away, a 50 ms timeout) returns at its deadline, on each path a user
// gets: Batch on a single client, Plain on a Ring. Close waits for what
// is still out, so no goroutine of the store is left once it returns.
// The client (its pool) and the proxy are the test's, and outlive it.
// Batch per node on a Cluster is TestNothingOutlivesCloseClusterBatch.
func TestNothingOutlivesClose(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(t *testing.T, addr string) redis.UniversalClient
		want   path
	}{
		{"batch_client", func(t *testing.T, addr string) redis.UniversalClient { return redistest.Client(t, addr) }, pathBatch},
		{"batch_ring", func(t *testing.T, addr string) redis.UniversalClient {
			r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr}, ContextTimeoutEnabled: true})
			t.Cleanup(func() { r.Close() })
			return r
		}, pathBatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := redistest.StartProxy(t, redistest.SharedAddr)
			c := tc.client(t, proxy.Addr())
			if err := c.Ping(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
			before := leakcheck.IgnoreCurrent()
			s, err := New(c, WithPrefix(testPrefix(t)), WithTimeout(50*time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			if s.path != tc.want {
				t.Fatalf("path %v, want %v", s.path, tc.want)
			}
			lateReplyThenClose(t, s, before, proxy.SetDelay)
		})
	}
}

// lateReplyThenClose decides once, then makes Redis 1 s late (delay) for
// s's 50 ms timeout: the next decision returns at its deadline, and once
// Close returns no goroutine started after before is left.
func lateReplyThenClose(t *testing.T, s *Store, before leakcheck.Option, delay func(time.Duration)) {
	t.Helper()
	p := limiter.MustPolicy("close", limiter.PerHour(10))
	req := limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}
	if _, err := s.Take(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	delay(time.Second)
	start := time.Now()
	if _, err := s.Take(context.Background(), req); err == nil {
		t.Fatal("a reply 1 s late within a 50 ms timeout: no error")
	}
	if took := time.Since(start); took > 50*time.Millisecond+slack {
		t.Fatalf("late reply: Take took %v", took)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	leakcheck.VerifyNone(t, before,
		// The proxy's pipes and the client's connections belong to the
		// test, and so does a Cluster client's reload of its slot map,
		// which a failed call asks for.
		leakcheck.IgnoreTopFunction("github.com/fixedwindow/ratelimit/internal/redistest.(*Proxy).pipe"),
		leakcheck.IgnoreAnyFunction("github.com/fixedwindow/ratelimit/internal/redistest.(*Proxy).pipe"),
		leakcheck.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*clusterStateHolder).LazyReload.func1"))
}

// TestTakeRacingCloseIsNotAnOutage: a decision that passed Take's closed
// check while Close ran finds the batcher closed. That is the store's
// answer, ErrClosed, never an outage that FailOpen would admit.
func TestTakeRacingCloseIsNotAnOutage(t *testing.T) {
	p := limiter.MustPolicy("closerace", limiter.PerMinute(5))
	s := newStore(t, sharedClient(t), WithFailOpen())
	if s.batch == nil {
		t.Fatal("a single-node client should get the batcher")
	}
	s.batch.close() // as Close does, after Take has checked s.closed
	d, err := s.Take(context.Background(), limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1})
	if !errors.Is(err, limiter.ErrClosed) || d.Allowed {
		t.Fatalf("Take during Close = %+v, %v; want a refusal with ErrClosed", d, err)
	}
	if st := s.Stats(); st.Degraded != 0 {
		t.Fatalf("Stats = %+v, want nothing degraded", st)
	}
}

// TestNothingOutlivesCloseClusterBatch: on a Cluster, Batch runs each
// round's pipeline to the deadline of its oldest decision (Redis 1 s
// away, a 50 ms timeout); Close waits for the rounds, so no goroutine of
// the store is left once it returns.
func TestNothingOutlivesCloseClusterBatch(t *testing.T) {
	cl := redistest.SharedCluster(t)
	proxies := map[string]*redistest.Proxy{}
	for _, a := range cl.Addrs() {
		proxies[a] = redistest.StartProxy(t, a)
	}
	c := cl.Client(t, func(o *redis.ClusterOptions) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if px, ok := proxies[addr]; ok {
				addr = px.Addr()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		}
	})
	if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		return n.Ping(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	before := leakcheck.IgnoreCurrent()
	s, err := New(c, WithPrefix(testPrefix(t)), withPath(pathBatch), WithTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if !isClusterRouter(s) {
		t.Fatal("Batch on a Cluster client: no slot batcher")
	}
	lateReplyThenClose(t, s, before, func(d time.Duration) {
		for _, px := range proxies {
			px.SetDelay(d)
		}
	})
}

// TestCloseIsIdempotent: Close returns nil however often it is called,
// one call after another or two at once, in every state a store can be
// closed in; a second call used to close the renewer's stop channel again
// once the store had held a slot. Every call after the first leaves the
// store closed: a decision answers ErrClosed.
func TestCloseIsIdempotent(t *testing.T) {
	p := limiter.MustPolicy("closing", limiter.PerMinute(10))
	ctx := context.Background()
	decide := func(t *testing.T, s *Store) {
		t.Helper()
		if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}); err != nil {
			t.Fatalf("Take: %v", err)
		}
	}
	// hold takes a slot of a cap of 2 and returns its release; the
	// InFlight is closed when the test ends, after the store.
	hold := func(t *testing.T, s *Store) func() {
		t.Helper()
		d, release := take(t, newCap(t, s, "closing", 2), "k")
		if !d.Allowed {
			t.Fatalf("Acquire: %+v, want a slot", d)
		}
		return release
	}
	for _, tc := range []struct {
		name  string
		addr  func(t *testing.T) string
		opts  []Option
		setup func(t *testing.T, s *Store)
	}{
		{"fresh", sharedAddr, nil, func(*testing.T, *Store) {}},
		{"after_decisions", sharedAddr, nil, decide},
		{"slots_held_and_released", sharedAddr, nil, func(t *testing.T, s *Store) {
			decide(t, s)
			hold(t, s)()
			if st := s.Stats(); st.SlotsHeld != 0 {
				t.Fatalf("after the release: %d slots held, want 0", st.SlotsHeld)
			}
		}},
		{"slots_still_held", sharedAddr, nil, func(t *testing.T, s *Store) {
			t.Cleanup(hold(t, s)) // released after Close: harmless
			if st := s.Stats(); st.SlotsHeld != 1 {
				t.Fatalf("%d slots held, want 1", st.SlotsHeld)
			}
		}},
		{"fail_local_redis_up", sharedAddr, []Option{WithFailLocal(2)}, func(t *testing.T, s *Store) {
			decide(t, s)
			t.Cleanup(hold(t, s))
		}},
		{"fail_local_redis_away", deadAddr, []Option{WithFailLocal(2), WithTimeout(200 * time.Millisecond)}, func(t *testing.T, s *Store) {
			decide(t, s) // by the fallback
			t.Cleanup(hold(t, s))
			if st := s.Stats(); st.Degraded != 2 {
				t.Fatalf("stats %+v: want the decision and the slot degraded to the fallback", st)
			}
		}},
	} {
		for _, concurrent := range []bool{false, true} {
			name := tc.name + "/twice"
			if concurrent {
				name = tc.name + "/concurrently"
			}
			t.Run(name, func(t *testing.T) {
				// Not newStore: a Close that panicked holding a lock would
				// hang its cleanup's Close.
				s, err := New(redistest.Client(t, tc.addr(t)), append([]Option{WithPrefix(testPrefix(t)), WithTimeout(5 * time.Second)}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				tc.setup(t, s)
				errs := make(chan error, 2)
				if concurrent {
					var wg sync.WaitGroup
					for range 2 {
						wg.Go(func() { errs <- closeNoPanic(s) })
					}
					wg.Wait()
				} else {
					errs <- closeNoPanic(s)
					errs <- closeNoPanic(s)
				}
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("Close: got %v, want nil", err)
					}
				}
				if _, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}); !errors.Is(err, limiter.ErrClosed) {
					t.Fatalf("Take after Close: got %v, want ErrClosed", err)
				}
			})
		}
	}
}

// closeNoPanic closes s, and returns a panic of Close as an error.
func closeNoPanic(s *Store) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return s.Close()
}

func sharedAddr(t *testing.T) string {
	t.Helper()
	sharedClient(t) // fails, never skips, when the shared Redis is missing
	return redistest.SharedAddr
}

// deadAddr returns a loopback address nothing listens on: every call
// is refused at once.
func deadAddr(t *testing.T) string {
	return "127.0.0.1:" + strconv.Itoa(redistest.FreePort(t))
}
