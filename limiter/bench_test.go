package limiter

import (
	"context"
	"hash/maphash"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// frozenClock returns one instant: benchmarks measure the store, not the
// system clock, and never cross a window mid-run.
type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "203.0." + strconv.Itoa(i/256%256) + "." + strconv.Itoa(i%256) + "#" + strconv.Itoa(i)
	}
	return keys
}

// BenchmarkAllow measures Limiter.Allow on the in-memory store, one hot key
// and 10,000 keys, serial and parallel. The limit is high enough that every
// call is admitted and charged: the full read-modify-write path.
func BenchmarkAllow(b *testing.B) {
	for _, keys := range []int{1, 10_000} {
		for _, parallel := range []bool{false, true} {
			name := "keys=" + strconv.Itoa(keys) + "/serial"
			if parallel {
				name = "keys=" + strconv.Itoa(keys) + "/parallel"
			}
			b.Run(name, func(b *testing.B) {
				benchAllow(b, MustPolicy("bench", PerMinute(1<<30)), keys, parallel)
			})
		}
	}
	b.Run("layered/keys=10000/parallel", func(b *testing.B) {
		benchAllow(b, MustPolicy("bench", PerMinute(1<<30), PerSecond(1<<30)), 10_000, true)
	})
	// A store at its bound: 100,000 keys in turn through 8,192 counters,
	// so nearly every call is a key the store no longer holds, inserted by
	// evicting another.
	for _, parallel := range []bool{false, true} {
		name := "bound=8192/keys=100000/serial"
		if parallel {
			name = "bound=8192/keys=100000/parallel"
		}
		b.Run(name, func(b *testing.B) {
			benchAllow(b, MustPolicy("bench", PerMinute(1<<30)), 100_000, parallel, WithMaxKeys(8192))
		})
	}
}

// BenchmarkAllowCalendar is BenchmarkAllow's 10,000 keys under calendar
// rates: a day in Paris, and a month in Paris over a minute. The window
// comes from the policy's cache (two comparisons), so a calendar rate
// costs about what a fixed one does; the first decision of each window
// computes it afresh (see internal/calendar's BenchmarkWindow).
func BenchmarkAllowCalendar(b *testing.B) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    *Policy
	}{
		{"day", MustPolicy("bench", PerDayIn(1<<30, paris))},
		{"month+minute", MustPolicy("bench", PerMonthIn(1<<30, paris), PerMinute(1<<30))},
	} {
		for _, parallel := range []bool{false, true} {
			name := tc.name + "/keys=10000/serial"
			if parallel {
				name = tc.name + "/keys=10000/parallel"
			}
			b.Run(name, func(b *testing.B) { benchAllow(b, tc.p, 10_000, parallel) })
		}
	}
}

// benchAllow runs Limiter.Allow over nkeys keys, on a store of its own
// made with opts.
func benchAllow(b *testing.B, p *Policy, nkeys int, parallel bool, opts ...MemoryOption) {
	st, err := NewMemoryStore(append([]MemoryOption{WithSweepInterval(0)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l, err := New(p, WithClock(frozenClock{noon}), WithStore(st))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	keys := benchKeys(nkeys)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		i := 0
		for b.Loop() {
			if _, err := l.Allow(ctx, keys[i%nkeys], 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		i := int(time.Now().UnixNano()) // spread goroutines over the keys
		for pb.Next() {
			if _, err := l.Allow(ctx, keys[uint(i)%uint(nkeys)], 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// BenchmarkHeapPerKey reports the live heap the in-memory store holds per
// active key once 1,000,000 distinct keys have each made one request in the
// current window (bytes/key; the key strings themselves are the caller's
// and not counted). Run with -benchtime=1x: one iteration is one fill.
func BenchmarkHeapPerKey(b *testing.B) {
	const n = 1_000_000
	keys := benchKeys(n)
	p := MustPolicy("heap", PerMinute(10))
	ctx := context.Background()
	var perKey float64
	for b.Loop() {
		before := liveHeap()
		st, err := NewMemoryStore(WithSweepInterval(0), WithMaxKeys(2*n))
		if err != nil {
			b.Fatal(err)
		}
		for _, k := range keys {
			if _, err := st.Take(ctx, Request{Key: k, Policy: p, Now: noon, Cost: 1}); err != nil {
				b.Fatal(err)
			}
		}
		perKey = float64(liveHeap()-before) / n
		runtime.KeepAlive(st)
		if st.Stats().Keys != n {
			b.Fatalf("store holds %d keys, want %d", st.Stats().Keys, n)
		}
		st.Close()
	}
	b.ReportMetric(perKey, "bytes/key")
	b.ReportMetric(0, "ns/op")
}

func liveHeap() int64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// BenchmarkFloor is the least any in-memory store could do per call: hash
// the key, lock a shard, bump a map counter. It runs in the same process as
// BenchmarkAllow so that the two can be compared on a noisy machine; the
// gap is the price of policies, windows, decisions and the Store interface.
func BenchmarkFloor(b *testing.B) {
	type shard struct {
		mu sync.Mutex
		m  map[uint64]int64
		_  [40]byte
	}
	for _, parallel := range []bool{false, true} {
		name := "keys=10000/serial"
		if parallel {
			name = "keys=10000/parallel"
		}
		b.Run(name, func(b *testing.B) {
			shards := make([]shard, 256)
			for i := range shards {
				shards[i].m = map[uint64]int64{}
			}
			seed := maphash.MakeSeed()
			keys := benchKeys(10_000)
			bump := func(k string) {
				h := maphash.String(seed, k)
				sh := &shards[h&255]
				sh.mu.Lock()
				sh.m[h]++
				sh.mu.Unlock()
			}
			b.ReportAllocs()
			b.ResetTimer()
			if !parallel {
				i := 0
				for b.Loop() {
					bump(keys[i%len(keys)])
					i++
				}
				return
			}
			b.RunParallel(func(pb *testing.PB) {
				i := int(time.Now().UnixNano())
				for pb.Next() {
					bump(keys[uint(i)%uint(len(keys))])
					i++
				}
			})
		})
	}
}
