package limiter

import (
	"context"
	"runtime"
	"strconv"
	"testing"
)

// floodHeapBudget is the documented live heap per counter of the in-memory
// store (docs/performance.md, "Memory"): BenchmarkHeapPerKey measures 33.6 B.
const floodHeapBudget = 40

// TestFloodMillionKeysAtDefaultBound sends one request from each of
// 1,000,000 distinct keys to a store at its default bound: all fit, none is
// evicted, a legitimate client's count survives, and the live heap stays
// within the documented figure.
func TestFloodMillionKeysAtDefaultBound(t *testing.T) {
	const n = 1_000_000
	p := MustPolicy("flood", PerMinute(5))
	keys := benchKeys(n)
	before := liveHeap()
	st := newTestStore(t)
	legit := "legitimate-client"
	for range 5 {
		take(t, st, p, legit, noon)
	}
	ctx := context.Background()
	for _, k := range keys {
		if _, err := st.Take(ctx, Request{Key: k, Policy: p, Now: noon, Cost: 1}); err != nil {
			t.Fatal(err)
		}
	}
	perKey := float64(liveHeap()-before) / n // the keys were made before: only the store counts
	runtime.KeepAlive(keys)
	t.Logf("live heap of the store per key: %.1f B", perKey)
	if perKey > floodHeapBudget {
		t.Errorf("store holds %.1f B per key, documented budget %d B", perKey, floodHeapBudget)
	}
	if st.Stats().Keys != n+1 || st.Stats().Evictions != 0 {
		t.Errorf("Len %d, Evictions %d; want %d and 0 below the bound", st.Stats().Keys, st.Stats().Evictions, n+1)
	}
	if d := take(t, st, p, legit, noon); d.Allowed {
		t.Error("the legitimate client's exhausted quota was reset by the flood")
	}
}

// TestFloodPastBoundEvictsAndCounts: a flood far past the bound of keys
// that each spend their whole budget evicts current counters, a
// legitimate client's among them, and that client's budget starts again:
// the documented price of a bounded store. Its flood's counters are as
// spent as the client's, so eviction cannot tell them apart; a flood of
// fresh keys that spend less is evicted first (see
// TestMemoryStoreFloodKeepsSpentBudgets).
func TestFloodPastBoundEvictsAndCounts(t *testing.T) {
	const bound = 1024
	st := newTestStore(t, WithMaxKeys(bound), WithShards(4))
	p := MustPolicy("flood", PerMinute(5))
	legit := "legitimate-client"
	for range 5 {
		take(t, st, p, legit, noon)
	}
	for i := range 100 * bound {
		for range 5 {
			take(t, st, p, "flood-"+strconv.Itoa(i), noon)
		}
	}
	if st.Stats().Keys != bound {
		t.Errorf("Len %d, want the bound %d", st.Stats().Keys, bound)
	}
	if want := uint64(100*bound + 1 - bound); st.Stats().Evictions != want {
		t.Errorf("Evictions %d, want %d", st.Stats().Evictions, want)
	}
	// Each eviction in the client's shard takes it with probability
	// 1/256; after ~25,000 of them it survives with probability e^-100.
	if d := take(t, st, p, legit, noon); !d.Allowed || d.Remaining != 4 {
		t.Errorf("legitimate client after the flood: %+v, want a fresh budget (evicted)", d)
	}
}
