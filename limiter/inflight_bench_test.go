package limiter

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkInFlight measures one Acquire and its release on the memory
// store, the twin of BenchmarkAllow's cases (run them together, -bench
// 'Allow|InFlight', to compare within one run): one hot key and 10,000
// keys, serial and parallel, every call admitted.
func BenchmarkInFlight(b *testing.B) {
	for _, keys := range []int{1, 10_000} {
		for _, parallel := range []bool{false, true} {
			name := "keys=" + strconv.Itoa(keys) + "/serial"
			if parallel {
				name = "keys=" + strconv.Itoa(keys) + "/parallel"
			}
			b.Run(name, func(b *testing.B) { benchInFlight(b, keys, parallel) })
		}
	}
}

func benchInFlight(b *testing.B, nkeys int, parallel bool) {
	st, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	f, err := NewInFlight("bench", 1<<30, WithClock(frozenClock{noon}), WithStore(st))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	keys := benchKeys(nkeys)
	ctx := context.Background()
	one := func(key string) {
		d, release, err := f.Acquire(ctx, key)
		if err != nil || !d.Allowed {
			b.Fatalf("Acquire: %+v, %v", d, err)
		}
		release()
	}
	b.ReportAllocs()
	b.ResetTimer()
	if !parallel {
		i := 0
		for b.Loop() {
			one(keys[i%nkeys])
			i++
		}
		return
	}
	b.RunParallel(func(pb *testing.PB) {
		i := int(time.Now().UnixNano())
		for pb.Next() {
			one(keys[uint(i)%uint(nkeys)])
			i++
		}
	})
}
