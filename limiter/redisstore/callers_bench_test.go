package redisstore

import (
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// benchKeys returns n client keys, "client-0" on.
func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "client-" + strconv.Itoa(i)
	}
	return keys
}

// benchCallers runs one b.N times over keys in turn, from callers
// goroutines at once (a plain loop for one), and reports the script
// calls s sent per op (calls/op).
func benchCallers(b *testing.B, s *Store, callers int, keys []string, one func(key string)) {
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
}
