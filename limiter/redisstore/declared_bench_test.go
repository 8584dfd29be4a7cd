package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// BenchmarkDeclaredKeys measures what declaring every key costs: 64
// callers over 1,000 keys, every decision admitted, on the shared Redis
// and on the three-master Cluster, the store's default (one call per
// server for the decisions that queue: a node call per master on the
// Cluster) against WithDeclaredKeys (a call per client key). calls/op is
// Stats.RoundTrips per decision. Give a fixed load: -benchtime 20000x.
func BenchmarkDeclaredKeys(b *testing.B) {
	for _, tc := range []struct {
		name   string
		client func(b *testing.B) redis.UniversalClient
		opts   []Option
	}{
		{"single/one_call", func(b *testing.B) redis.UniversalClient { return sharedClient(b) }, nil},
		{"single/declared_keys", func(b *testing.B) redis.UniversalClient { return sharedClient(b) }, []Option{WithDeclaredKeys()}},
		{"cluster/node_calls", func(b *testing.B) redis.UniversalClient { return redistest.SharedCluster(b).Client(b) }, nil},
		{"cluster/declared_keys", func(b *testing.B) redis.UniversalClient { return redistest.SharedCluster(b).Client(b) }, []Option{WithDeclaredKeys()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			s := newStore(b, tc.client(b), append([]Option{WithOverLimitCache(0)}, tc.opts...)...)
			p := limiter.MustPolicy("declared-bench", limiter.PerHour(1<<30))
			keys := make([]string, 1000)
			for i := range keys {
				keys[i] = "client-" + strconv.Itoa(i)
			}
			ctx := context.Background()
			before := s.Stats()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
			var next atomic.Uint64
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					req := limiter.Request{Key: keys[next.Add(1)%uint64(len(keys))], Policy: p, Now: time.Now(), Cost: 1}
					if d, err := s.Take(ctx, req); err != nil || !d.Allowed {
						b.Errorf("Take: %+v, %v", d, err)
						return
					}
				}
			})
			b.StopTimer()
			st := s.Stats()
			b.ReportMetric(float64(st.RoundTrips-before.RoundTrips)/float64(b.N), "calls/op")
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		})
	}
}
