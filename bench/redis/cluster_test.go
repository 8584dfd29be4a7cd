package redis

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// clusterKeys is how many keys the Cluster benchmark spreads its callers
// over: many clients, few sharing a slot.
const clusterKeys = 1000

// clusterClient returns a Cluster client of cl for one contender, with the
// command counter on every node's client, so that it counts what goes on
// the wire (redirects and retries included).
// Retries and redirects are go-redis's defaults (the store's script calls
// are never retried; MOVED and ASK are followed, as TestClusterRedirects
// checks). The peers get the same client.
func clusterClient(b *testing.B, cl *redistest.Cluster) (*goredis.ClusterClient, *counter) {
	b.Helper()
	c := goredis.NewClusterClient(&goredis.ClusterOptions{
		Addrs:                 cl.Addrs(),
		PoolSize:              callers,
		ContextTimeoutEnabled: true,
	})
	h := &counter{}
	c.OnNewNode(func(n *goredis.Client) { n.AddHook(h) })
	b.Cleanup(func() { c.Close() })
	if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *goredis.Client) error {
		return n.Ping(ctx).Err()
	}); err != nil {
		b.Fatalf("cluster ping: %v", err)
	}
	return c, h
}

// BenchmarkClusterAdmit is BenchmarkAdmit on a three-master Redis Cluster
// on loopback that the benchmark starts (once, for all its sub-benchmarks
// and -count runs) and stops: every decision admits, over 1,000 keys.
// server-cpu-ns/op adds up the three masters. The store and its floor
// run on every shape, as in BenchmarkAdmit.
func BenchmarkClusterAdmit(b *testing.B) {
	cl := redistest.StartCluster(b)
	runShaped(b, "cadmit-", clusterKeys, func(b *testing.B) (goredis.UniversalClient, *counter) { return clusterClient(b, cl) })
	for _, ct := range contenders[1:] {
		b.Run(ct.name, func(b *testing.B) {
			c, h := clusterClient(b, cl)
			decide := ct.make(b, c, 1<<30)
			names := keyNames("cadmit-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")
			run(b, c, h, decide, names[:clusterKeys])
		})
	}
}

// BenchmarkRingAdmit is BenchmarkAdmit on a go-redis Ring of three
// redis-server processes that the benchmark starts: every decision
// admits, over 1,000 keys. The store sends one script call per shard for
// the decisions that queue. ulule is left out: it loads its scripts on one shard at
// start and its EVALSHA then fails with NOSCRIPT on the others.
func BenchmarkRingAdmit(b *testing.B) {
	addrs := map[string]string{}
	for i := range 3 {
		addrs["shard"+strconv.Itoa(i)] = redistest.StartServer(b).Addr()
	}
	for _, ct := range contenders {
		if ct.name == "ulule" {
			continue
		}
		b.Run(ct.name, func(b *testing.B) {
			c := goredis.NewRing(&goredis.RingOptions{Addrs: addrs, PoolSize: callers, ContextTimeoutEnabled: true})
			h := &counter{}
			b.Cleanup(func() { c.Close() })
			// The shards exist once NewRing returns: hook each one.
			if err := c.ForEachShard(context.Background(), func(ctx context.Context, n *goredis.Client) error {
				n.AddHook(h)
				return n.Ping(ctx).Err()
			}); err != nil {
				b.Fatalf("ring ping: %v", err)
			}
			decide := ct.make(b, c, 1<<30)
			names := keyNames("radmit-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")
			run(b, c, h, decide, names[:clusterKeys])
		})
	}
}
