package redis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	goredis "github.com/redis/go-redis/v9"
)

// incrScript stands in for the store's script, which is not exported: it
// INCRs each of its keys, one write per "decision", so it is lighter than
// take.lua and the figures it gives are a ceiling for the transport, not
// for the store.
var incrScript = goredis.NewScript("local n = 0 for i = 1, #KEYS do n = redis.call('incr', KEYS[i]) end return n")

// batchRun is run for callers that gather decisions: g goroutines each take
// per decisions (pb.Next calls), then send them with flush, so that
// g*per decisions are in flight as in run.
func batchRun(b *testing.B, c goredis.UniversalClient, h *counter, g, per int, flush func(ctx context.Context, keys []string) error, names []string) {
	b.SetParallelism(g / 2)
	b.ReportAllocs()
	var seq atomic.Int64
	m := startMeter(b, c, h)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(seq.Add(1)) * 7919
		keys := make([]string, 0, per)
		for pb.Next() {
			i++
			keys = append(keys, names[i%len(names)])
			if len(keys) == per {
				if err := flush(ctx, keys); err != nil {
					b.Error(err)
					return
				}
				keys = keys[:0]
			}
		}
		if len(keys) > 0 {
			_ = flush(ctx, keys)
		}
	})
	m.report(b)
}

// BenchmarkScriptCeiling estimates, on a three-master Cluster it starts,
// what shapes of script calls could give a Cluster path, with
// the stand-in incrScript and 64 decisions in flight over 1,000 hash tags:
// one call per decision on the pool (plain) or through go-redis's cluster
// autopipeliner; per decisions gathered by a caller and sent as one
// ClusterClient.Pipeline (go-redis splits it per node); and per decisions
// of one hash tag (a hot key's) in one script call, as a per-slot Batch
// would send them. fixedwindow is the store with its defaults (Batch per
// node on a Cluster client) in the same run, for scale. Its name leaves it out of -bench Cluster.
func BenchmarkScriptCeiling(b *testing.B) {
	cl := redistest.StartCluster(b)
	tagged := func(p string) []string {
		n := keyNames(p + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")[:clusterKeys]
		for i := range n {
			n[i] = "{" + n[i] + "}"
		}
		return n
	}
	b.Run("fixedwindow", func(b *testing.B) {
		c, h := clusterClient(b, cl)
		run(b, c, h, ours(b, c, 1<<30), tagged("s"))
	})
	b.Run("incr_script_plain", func(b *testing.B) {
		c, h := clusterClient(b, cl)
		run(b, c, h, func(ctx context.Context, k string) (bool, error) {
			return true, incrScript.Run(ctx, c, []string{k}).Err()
		}, tagged("p"))
	})
	b.Run("incr_script_autopipeline", func(b *testing.B) {
		c, h := clusterClient(b, cl)
		ap, err := c.AutoPipeline()
		if err != nil {
			b.Fatal(err)
		}
		run(b, c, h, func(ctx context.Context, k string) (bool, error) {
			return true, incrScript.Run(ctx, ap, []string{k}).Err()
		}, tagged("a"))
	})
	for _, per := range []int{8, 32} {
		b.Run("incr_script_pipeline_per_node/per="+strconv.Itoa(per), func(b *testing.B) {
			c, h := clusterClient(b, cl)
			_ = incrScript.Load(context.Background(), c)
			names := tagged("n")
			batchRun(b, c, h, callers/per, per, func(ctx context.Context, keys []string) error {
				_, err := c.Pipelined(ctx, func(p goredis.Pipeliner) error {
					for _, k := range keys {
						incrScript.EvalSha(ctx, p, []string{k})
					}
					return nil
				})
				return err
			}, names)
		})
		b.Run("incr_script_one_call_per_slot/per="+strconv.Itoa(per), func(b *testing.B) {
			c, h := clusterClient(b, cl)
			tag := "{hot-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "}"
			names := make([]string, clusterKeys)
			for i := range names {
				names[i] = tag + strconv.Itoa(i%per)
			}
			batchRun(b, c, h, callers/per, per, func(ctx context.Context, keys []string) error {
				return incrScript.Run(ctx, c, keys).Err()
			}, names)
		})
	}
}
