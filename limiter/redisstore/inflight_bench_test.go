package redisstore

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// BenchmarkInFlightRedis measures one Acquire and its release on the
// shared Redis, over 10,000 keys: a caller alone, and 64 at once, whose
// holds and releases share rounds. calls/op is the script calls sent per
// request (a hold and a release; fewer when rounds are shared).
func BenchmarkInFlightRedis(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s := newStore(b, sharedClient(b))
			f := newCap(b, s, "bench", 1<<30)
			keys := make([]string, 10_000)
			for i := range keys {
				keys[i] = "client-" + strconv.Itoa(i)
			}
			ctx := context.Background()
			one := func(key string) {
				d, release, err := f.Acquire(ctx, key)
				if err != nil || !d.Allowed {
					b.Fatalf("Acquire: %+v, %v", d, err)
				}
				release()
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
