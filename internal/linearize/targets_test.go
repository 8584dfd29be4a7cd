package linearize

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// The policy of the runs: 10 a second and 30 every 4 s, costs 1 to 3,
// and at most 3 slots at once. The leases' runs use longer windows, in
// which a lease (a second at most) ends well before its window; the
// settles' run limits high enough that most reservations are admitted,
// and settled; the cache's run a long window that two seconds fill.
var (
	shortSpec  = Spec{Windows: []int64{1000, 4000}, Limits: []int64{10, 30}, Slots: 3}
	leaseSpec  = Spec{Windows: []int64{4000, 12000}, Limits: []int64{24, 60}, Slots: 3}
	settleSpec = Spec{Windows: []int64{1000, 4000}, Limits: []int64{400, 1200}, Slots: 3}
	cacheSpec  = Spec{Windows: []int64{1000, 4000}, Limits: []int64{10, 20}, Slots: 3}
)

// leaseDivisor caps each lease at 24/4 = 6 units.
const leaseDivisor = 4

// newRun returns a run of name and seed with the policy of sp, recording
// for length.
func newRun(t testing.TB, name string, seed uint64, sp Spec, length time.Duration) *run {
	return &run{t: t, name: name, seed: seed, spec: sp, length: length, phase: time.Second,
		keys: 3, workers: 2, maxCost: 3, actual: 3, resets: 20, stray: 2, returns: true, timeout: storeTimeout}
}

// policy returns the limiter's policy and cap for r's spec.
func (r *run) policy() *limiter.Policy {
	var rates []limiter.Rate
	for i, w := range r.spec.Windows {
		rates = append(rates, limiter.Rate{Limit: r.spec.Limits[i], Window: time.Duration(w) * time.Millisecond})
	}
	return limiter.MustPolicy("lin", rates...)
}

// addReplica adds a replica deciding on store.
func (r *run) addReplica(store limiter.Store, server bool) {
	t := r.t
	clk := limitertest.New(epoch0)
	lim, err := limiter.New(r.policy(), limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lim.Close() })
	cap, err := limiter.NewInFlight("lincap", r.spec.Slots, limiter.WithStore(store), limiter.WithClock(clk), limiter.WithInFlightLease(slotLease))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cap.Close() })
	r.reps = append(r.reps, &replica{id: len(r.reps), clock: clk, lim: lim, slots: store.(limiter.SlotStore), server: server,
		req: limiter.SlotRequest{Policy: cap.Policy(), Max: r.spec.Slots, Lease: slotLease}})
	r.spec.Replicas = len(r.reps)
}

// slotLease is how long a slot outlives a holder that died holding it
// (limiter.WithInFlightLease): the harness asks the store directly, with
// the cap's own lease.
const slotLease = 10 * time.Second

// memory makes r one replica on a MemoryStore, with eight workers.
func (r *run) memory() {
	r.spec.Store = "memory"
	s, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { s.Close() })
	r.addReplica(s, false)
	r.workers = 8
}

// redisReplicas makes r three replicas, each with its own client (from
// client) and store on one Redis, with opts and a prefix of the run's.
func (r *run) redisReplicas(client func() redis.UniversalClient, opts ...redisstore.Option) {
	r.spec.Store = "redis"
	prefix := fmt.Sprintf("lin:%s:%d:%d:", r.name, r.seed, time.Now().UnixNano())
	for range 3 {
		c := client()
		r.t.Cleanup(func() { c.Close() })
		changes := new(atomic.Int64)
		observe := redisstore.WithObserver(func(e redisstore.Event) {
			if e.Kind == redisstore.HealthChanged {
				changes.Add(1)
			}
		})
		s, err := redisstore.New(c, append([]redisstore.Option{redisstore.WithPrefix(prefix), observe}, opts...)...)
		if err != nil {
			r.t.Fatal(err)
		}
		r.t.Cleanup(func() { s.Close() })
		r.addReplica(s, r.spec.ServerClock)
		rp := r.reps[len(r.reps)-1]
		rp.health, rp.changes = s.Health, changes
	}
}

// single returns a client factory for addr, as the store needs it.
func single(addr string, dial func(context.Context, string, string) (net.Conn, error)) func() redis.UniversalClient {
	return func() redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond,
			PoolSize: 16, Dialer: dial})
	}
}

// A server is a throwaway Redis with an append-only file (so that a
// restart keeps what it acknowledged), a proxy in front of it for each
// client made (each replica: its replies can be dropped, at random or
// aimed at its calls), and an admin client of its own.
type server struct {
	t       testing.TB
	srv     *redistest.Server
	proxies []*redistest.Proxy // one per client made, in order
	admin   *redis.Client
}

func startServer(t testing.TB) *server {
	srv := redistest.StartServer(t, "--appendonly", "yes", "--appendfsync", "everysec", "--repl-diskless-sync-delay", "0")
	return &server{t: t, srv: srv, admin: redistest.Client(t, srv.Addr())}
}

// client returns a client factory for s: each client it makes reaches
// the server through a proxy of its own.
func (s *server) client() func() redis.UniversalClient {
	return func() redis.UniversalClient {
		p := redistest.StartProxy(s.t, s.srv.Addr())
		s.proxies = append(s.proxies, p)
		return single(p.Addr(), nil)()
	}
}

// byClient returns the proxies of the clients made, one each.
func (s *server) byClient() [][]*redistest.Proxy {
	var out [][]*redistest.Proxy
	for _, p := range s.proxies {
		out = append(out, []*redistest.Proxy{p})
	}
	return out
}

// faults returns every fault family on one server: replies lost after
// the script ran, connections reset, the server paused past the
// timeout, a replica's clock stepped, the server restarted. Called once
// the clients are made.
func (s *server) faults() []faultKind {
	return []faultKind{lostReplies(s.proxies...), connReset(s.admin), pause(s.srv), clockStep, restart(s.srv)}
}

// A cluster is three masters with a replica each, every node with an
// append-only file, reached by each client made through proxies of its
// own, one per node.
type cluster struct {
	t       testing.TB
	c       *redistest.Cluster
	proxies [][]*redistest.Proxy // per client made, one per node
	masters []*redistest.Server
	admins  []*redis.Client
}

func startCluster(t testing.TB) *cluster {
	c := redistest.StartClusterWithReplicas(t, 2000, "--appendonly", "yes", "--appendfsync", "everysec")
	cl := &cluster{t: t, c: c}
	for _, n := range c.Nodes[:3] {
		cl.masters = append(cl.masters, n)
		cl.admins = append(cl.admins, redistest.Client(t, n.Addr()))
	}
	return cl
}

// client returns a client factory for the cluster, each client through
// proxies of its own.
func (cl *cluster) client() func() redis.UniversalClient {
	return func() redis.UniversalClient {
		via := map[string]*redistest.Proxy{}
		var ps []*redistest.Proxy
		for _, n := range cl.c.Nodes {
			p := redistest.StartProxy(cl.t, n.Addr())
			via[n.Addr()] = p
			ps = append(ps, p)
		}
		cl.proxies = append(cl.proxies, ps)
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.c.Addrs(), ContextTimeoutEnabled: true,
			DialTimeout: 200 * time.Millisecond, PoolSize: 16, Dialer: dialVia(via)})
	}
}

// faults returns every fault family on the cluster; called once the
// clients are made.
func (cl *cluster) faults() []faultKind {
	return []faultKind{lostReplies(slices.Concat(cl.proxies...)...), connReset(cl.admins...), pause(cl.masters...), clockStep, restart(cl.masters...)}
}
