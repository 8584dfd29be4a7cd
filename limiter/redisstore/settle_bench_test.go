package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// BenchmarkSettleRedis measures a request admitted at a reservation of 1
// and settled at 3 (a decision and a settle) on the shared Redis, over
// 10,000 keys: a caller alone, and 64 at once, whose decisions and
// settles share rounds. calls/op is the script calls sent per request
// (a decision and a settle: 2 alone; fewer when rounds are shared).
func BenchmarkSettleRedis(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s := newStore(b, sharedClient(b))
			l := newLimiter(b, limiter.MustPolicy("bench", limiter.PerHour(1<<30)), s, limitertest.New(t0))
			keys := make([]string, 10_000)
			for i := range keys {
				keys[i] = "client-" + strconv.Itoa(i)
			}
			ctx := context.Background()
			one := func(key string) {
				d, err := l.Allow(ctx, key, 1)
				if err != nil || !d.Allowed {
					b.Fatalf("Allow: %+v, %v", d, err)
				}
				if err := l.Settle(ctx, key, 1, 3, d); err != nil {
					b.Fatalf("Settle: %v", err)
				}
			}
			before := s.Stats().RoundTrips
			b.ReportAllocs()
			b.ResetTimer()
			if callers == 1 {
				i := 0
				for b.Loop() {
					one(keys[i%len(keys)])
					i++
				}
			} else {
				b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
				var next atomic.Uint64
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						one(keys[next.Add(1)%uint64(len(keys))])
					}
				})
			}
			b.StopTimer()
			b.ReportMetric(float64(s.Stats().RoundTrips-before)/float64(b.N), "calls/op")
		})
	}
}
