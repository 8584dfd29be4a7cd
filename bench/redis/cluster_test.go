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
// over, as in issue 12's measurement.
const clusterKeys = 1000

// clusterContenders are the contenders less Batch, which needs a client
// that sends everything to one server: on a Cluster client the store falls
// back to Plain, which runs anyway.
var clusterContenders = func() []contender {
	var out []contender
	for _, ct := range contenders {
		if ct.name != "fixedwindow_batch" {
			out = append(out, ct)
		}
	}
	return out
}()

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
// server-cpu-ns/op adds up the three masters.
func BenchmarkClusterAdmit(b *testing.B) {
	cl := redistest.StartCluster(b)
	for _, ct := range clusterContenders {
		b.Run(ct.name, func(b *testing.B) {
			c, h := clusterClient(b, cl)
			decide := ct.make(b, c, 1<<30)
			names := keyNames("cadmit-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")
			run(b, c, h, decide, names[:clusterKeys])
		})
	}
}
