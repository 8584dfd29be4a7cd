package memstore

import (
	"context"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/go-chi/httprate"
)

var noon = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "203.0." + strconv.Itoa(i/256%256) + "." + strconv.Itoa(i%256) + "#" + strconv.Itoa(i)
	}
	return ks
}

func contenders(tb testing.TB, maxKeys int) map[string]func() (limiter.Store, func()) {
	return map[string]func() (limiter.Store, func()){
		"sharded": func() (limiter.Store, func()) {
			s, err := limiter.NewMemoryStore(limiter.WithMaxKeys(maxKeys), limiter.WithSweepInterval(0))
			if err != nil {
				tb.Fatal(err)
			}
			return s, func() { s.Close() }
		},
		"otter": func() (limiter.Store, func()) {
			s, err := NewOtterStore(maxKeys, 2*time.Minute)
			if err != nil {
				tb.Fatal(err)
			}
			return s, s.Close
		},
	}
}

// TestOtterStoreAdmitsExactly checks the contender is correct before it is
// timed: 100 goroutines on one key with limit 10 admit exactly 10.
func TestOtterStoreAdmitsExactly(t *testing.T) {
	s, err := NewOtterStore(1000, 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l, err := limiter.New(limiter.MustPolicy("t", limiter.PerMinute(10)), limiter.WithStore(s), limiter.WithClock(frozenClock{noon}))
	if err != nil {
		t.Fatal(err)
	}
	results := make(chan bool, 100)
	for range 100 {
		go func() {
			d, err := l.Allow(context.Background(), "k", 1)
			results <- err == nil && d.Allowed
		}()
	}
	admitted := 0
	for range 100 {
		if <-results {
			admitted++
		}
	}
	if admitted != 10 {
		t.Fatalf("admitted %d, want 10", admitted)
	}
}

// BenchmarkStore runs Limiter.Allow over each store, 10,000 keys, serial
// and parallel, every call admitted.
func BenchmarkStore(b *testing.B) {
	ks := keys(10_000)
	p := limiter.MustPolicy("bench", limiter.PerMinute(1<<30))
	for _, name := range []string{"sharded", "otter"} {
		for _, parallel := range []bool{false, true} {
			mode := "serial"
			if parallel {
				mode = "parallel"
			}
			b.Run(name+"/keys=10000/"+mode, func(b *testing.B) {
				s, done := contenders(b, 1<<20)[name]()
				defer done()
				l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(frozenClock{noon}))
				if err != nil {
					b.Fatal(err)
				}
				ctx := context.Background()
				b.ReportAllocs()
				b.ResetTimer()
				if !parallel {
					i := 0
					for b.Loop() {
						l.Allow(ctx, ks[i%len(ks)], 1)
						i++
					}
					return
				}
				b.RunParallel(func(pb *testing.PB) {
					i := int(time.Now().UnixNano())
					for pb.Next() {
						l.Allow(ctx, ks[uint(i)%uint(len(ks))], 1)
						i++
					}
				})
			})
		}
	}
}

// BenchmarkHeapPerKey reports live heap per active key after 1,000,000
// distinct keys made one request each (bytes/key), for both stores and,
// to check the method against the figure quoted for it, go-chi/httprate's
// local counter. Run with -benchtime=1x.
func BenchmarkHeapPerKey(b *testing.B) {
	const n = 1_000_000
	ks := keys(n)
	p := limiter.MustPolicy("heap", limiter.PerMinute(10))
	ctx := context.Background()
	for _, name := range []string{"sharded", "otter"} {
		b.Run(name, func(b *testing.B) {
			var perKey float64
			for b.Loop() {
				before := liveHeap()
				s, done := contenders(b, 2*n)[name]()
				for _, k := range ks {
					if _, err := s.Take(ctx, limiter.Request{Key: k, Policy: p, Now: noon, Cost: 1}); err != nil {
						b.Fatal(err)
					}
				}
				perKey = float64(liveHeap()-before) / n
				runtime.KeepAlive(s)
				done()
			}
			b.ReportMetric(perKey, "bytes/key")
			b.ReportMetric(0, "ns/op")
		})
	}
	b.Run("httprate", func(b *testing.B) {
		var perKey float64
		for b.Loop() {
			before := liveHeap()
			c := httprate.NewLocalLimitCounter(time.Minute)
			for _, k := range ks {
				c.IncrementBy(k, noon, 1)
			}
			perKey = float64(liveHeap()-before) / n
			runtime.KeepAlive(c)
		}
		b.ReportMetric(perKey, "bytes/key")
		b.ReportMetric(0, "ns/op")
	})
}

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
