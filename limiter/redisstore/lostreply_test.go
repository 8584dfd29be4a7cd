package redisstore

import (
	"context"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestNewKeepsClientsRetries: New takes clients with go-redis's default
// retries and redirects (the users' other commands keep them), and picks
// one round-trip path per client kind: Batch where everything goes to one
// server, per master on a Cluster and per shard on a Ring.
func TestNewKeepsClientsRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		want   path
	}{
		{"client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), pathBatch},
		{"failover", redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), pathBatch},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true}), pathBatch},
		{"ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, ContextTimeoutEnabled: true}), pathBatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.client.Close()
			s, err := New(tc.client)
			if err != nil {
				t.Fatalf("New: got %v, want a store", err)
			}
			defer s.Close()
			if s.path != tc.want || (s.batch != nil) != (tc.want == pathBatch) {
				t.Fatalf("path %v (batcher %v), want %v", s.path, s.batch != nil, tc.want)
			}
		})
	}
}

// chargedOnce makes decisions through l, arming arm() to drop the reply
// of every other one, and checks after each that Redis holds at most one
// more charge (exactly one when the decision was answered): the client
// never ran the script again on a new connection. A call may also fail on
// a pooled connection that the proxy had closed, without reaching Redis;
// at least one must have lost a reply after Redis ran the script.
func chargedOnce(t *testing.T, l *limiter.Limiter, count func() int64, arm func()) {
	t.Helper()
	ctx := context.Background()
	ranLost := 0
	for i := range 8 {
		if i%2 == 1 {
			arm()
		}
		before := count()
		_, err := l.Allow(ctx, "k", 1)
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("decision %d: got %v, want ErrUnavailable or an answer", i, err)
		}
		switch d := count() - before; {
		case d > 1:
			t.Fatalf("decision %d charged %d times (error %v), want at most once", i, d, err)
		case err == nil && d != 1:
			t.Fatalf("decision %d answered, charged %d times, want once", i, d)
		case err != nil && d == 1:
			ranLost++
		}
	}
	if ranLost == 0 {
		t.Fatal("no reply was lost after Redis ran the script: the test proved nothing")
	}
}

// TestLostReplyChargedOnce: a reply lost after Redis ran the script (the
// proxy drops it and resets the connection) charges the decision once, in
// every pipelining mode and on a Cluster client and a Ring, each built
// with go-redis's default retries and redirects: the store's script calls
// are never sent twice, whatever the client's settings.
func TestLostReplyChargedOnce(t *testing.T) {
	p := limiter.MustPolicy("lost", limiter.PerHour(100))
	shared := sharedClient(t)
	// One server behind a proxy, through a single client or a Ring of
	// that one shard.
	for _, kind := range []struct {
		name   string
		client func(t *testing.T, addr string) redis.UniversalClient
	}{
		{"client", func(t *testing.T, addr string) redis.UniversalClient {
			c := redistest.Client(t, addr)
			if got := c.Options().MaxRetries; got != 3 {
				t.Fatalf("client MaxRetries %d, want go-redis's default 3", got)
			}
			return c
		}},
		{"ring", func(t *testing.T, addr string) redis.UniversalClient {
			// A heartbeat within the test could take the dropped reply.
			r := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr},
				ContextTimeoutEnabled: true, HeartbeatFrequency: time.Hour})
			t.Cleanup(func() { r.Close() })
			if got := r.Options().MaxRetries; got != 3 {
				t.Fatalf("ring MaxRetries %d, want go-redis's default 3", got)
			}
			return r
		}},
	} {
		for _, mode := range []path{pathPlain, pathBatch} {
			t.Run(kind.name+"/"+mode.String(), func(t *testing.T) {
				proxy := redistest.StartProxy(t, redistest.SharedAddr)
				s := newStore(t, kind.client(t, proxy.Addr()), withPath(mode), WithOverLimitCache(0),
					WithBreaker(100, time.Second), WithTimeout(2*time.Second))
				l := newLimiter(t, p, s, limitertest.New(t0))
				chargedOnce(t, l, func() int64 {
					n, err := shared.Get(context.Background(), keyOf(s, "k", p, 0, t0)).Int64()
					if err != nil && err != redis.Nil {
						t.Fatal(err)
					}
					return n
				}, func() { proxy.DropReplies(1) })
			})
		}
	}
	t.Run("cluster", func(t *testing.T) {
		cl := redistest.SharedCluster(t)
		proxies := map[string]*redistest.Proxy{}
		for _, a := range cl.Addrs() {
			proxies[a] = redistest.StartProxy(t, a)
		}
		// Every connection to a node goes through that node's proxy.
		via := func(o *redis.ClusterOptions) {
			o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
				if px, ok := proxies[addr]; ok {
					addr = px.Addr()
				}
				var d net.Dialer
				return d.DialContext(ctx, network, addr)
			}
		}
		admin := cl.Client(t)
		for _, mode := range []path{pathPlain, pathBatch} {
			t.Run(mode.String(), func(t *testing.T) {
				// The Cluster client re-sends a command after a network
				// error within MaxRedirects (3 by default); its node
				// clients retry too when MaxRetries is set.
				c := cl.Client(t, via, func(o *redis.ClusterOptions) { o.MaxRetries = 3 })
				if o := c.Options(); o.MaxRedirects != 3 {
					t.Fatalf("cluster client MaxRedirects %d, want go-redis's default 3", o.MaxRedirects)
				}
				s := newStore(t, c, withPath(mode), WithOverLimitCache(0),
					WithBreaker(100, time.Second), WithTimeout(2*time.Second))
				l := newLimiter(t, p, s, limitertest.New(t0))
				key := keyOf(s, "k", p, 0, t0)
				owner, err := admin.MasterForKey(context.Background(), key)
				if err != nil {
					t.Fatal(err)
				}
				px := proxies[owner.Options().Addr]
				if px == nil {
					t.Fatalf("no proxy for %s", owner.Options().Addr)
				}
				chargedOnce(t, l, func() int64 {
					v, err := admin.Get(context.Background(), key).Result()
					if err != nil && err != redis.Nil {
						t.Fatal(err)
					}
					n, _ := strconv.ParseInt(v, 10, 64)
					return n
				}, func() { px.DropReplies(1) })
			})
		}
	})
}
