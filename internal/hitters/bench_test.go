package hitters

import (
	"encoding/json"
	"runtime"
	"strconv"
	"testing"
)

// BenchmarkAdd: a refusal counted in a full sketch of 1,000 keys, of a
// key in it (a heavy hitter) and of a key not in it (a flood of distinct
// keys, each taking the least counted key's place).
func BenchmarkAdd(b *testing.B) {
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = "203.0.113." + strconv.Itoa(i)
	}
	for _, bc := range []struct {
		name string
		key  func(i int) string
	}{
		{"in_sketch", func(i int) string { return keys[i%1000] }},
		{"flood", func(i int) string { return keys[i%len(keys)] }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s := New(1000)
			for i := range 1000 {
				s.Add(at(keys[i], t0))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				s.Add(at(bc.key(i), t0+int64(i%1000)))
			}
		})
	}
}

// BenchmarkSize reports what a full sketch of 1,000 keys (API-key-like
// keys of 40 bytes) holds in the heap per key, and the bytes per key
// of its summary as a replica writes it to Redis (JSON), with one run
// per key and with the most runs a key keeps; its time is that of
// filling the sketch.
func BenchmarkSize(b *testing.B) {
	const n = 1000
	for _, runs := range []int{1, maxRuns} {
		b.Run("runs="+strconv.Itoa(runs), func(b *testing.B) {
			var m0, m1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&m0)
			s := fill(n, runs)
			runtime.GC()
			runtime.ReadMemStats(&m1)
			body, _ := json.Marshal(s.Entries(t0 + 2*maxRuns*minute))
			b.ReportMetric(float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc))/n, "heap-B/key")
			b.ReportMetric(float64(len(body))/n, "json-B/key")
			runtime.KeepAlive(s)
			b.ReportAllocs()
			for range b.N {
				fill(n, runs)
			}
		})
	}
}

// fill returns a sketch of n keys, each refused in runs runs.
func fill(n, runs int) *Sketch {
	s := New(n)
	for i := range n {
		key := "hdr:X-Api-Key:key-" + strconv.Itoa(1e15+i) + "abcde"
		for r := range runs {
			s.Add(at(key, t0+int64(2*r)*minute)) // a gap: a run each
		}
	}
	return s
}
