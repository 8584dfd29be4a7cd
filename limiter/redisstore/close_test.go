package redisstore

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
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
			before := goleak.IgnoreCurrent()
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
func lateReplyThenClose(t *testing.T, s *Store, before goleak.Option, delay func(time.Duration)) {
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
	goleak.VerifyNone(t, before,
		// The proxy's pipes and the client's connections belong to the
		// test, and so does a Cluster client's reload of its slot map,
		// which a failed call asks for.
		goleak.IgnoreTopFunction("github.com/fixedwindow/ratelimit/internal/redistest.(*Proxy).pipe"),
		goleak.IgnoreAnyFunction("github.com/fixedwindow/ratelimit/internal/redistest.(*Proxy).pipe"),
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9.(*clusterStateHolder).LazyReload.func1"))
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
	before := goleak.IgnoreCurrent()
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
