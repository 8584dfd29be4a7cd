package limiter

import (
	"context"
	"testing"
)

// BenchmarkSettle measures Limiter.Settle on the in-memory store beside
// Allow, over 10,000 keys serially, each key admitted at 1 and settled at
// 500 (the difference charged: the common case of a model call's tokens).
// Issue 33's target: a settle within twice one Allow (go test -run '^$'
// -bench 'Settle|AllowBeside' -count 6 ./limiter, benchstat).
func BenchmarkSettle(b *testing.B) {
	st, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l, err := New(MustPolicy("tokens", PerMinute(1<<36)), WithClock(frozenClock{noon}), WithStore(st))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	const nkeys = 10_000
	keys := benchKeys(nkeys)
	ctx := context.Background()
	ds := make([]Decision, nkeys)
	for i, k := range keys {
		if ds[i], err = l.Allow(ctx, k, 1); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("op=allow", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, err := l.Allow(ctx, keys[i%nkeys], 1); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("op=settle", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := l.Settle(ctx, keys[i%nkeys], 1, 500, ds[i%nkeys]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}
