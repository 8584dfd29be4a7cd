package limiter

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// checkCounts compares the table with a model map, entry by entry, and
// checks that every entry is reachable from its home slot.
func checkCounts(t *testing.T, tab *counts, model map[uint64]int64) {
	t.Helper()
	if tab.n != len(model) {
		t.Fatalf("n = %d, model has %d", tab.n, len(model))
	}
	for h, c := range model {
		got, ok := tab.get(h)
		if !ok || got != c {
			t.Fatalf("get(%#x) = %d, %v; want %d", h, got, ok, c)
		}
	}
	seen := 0
	for _, s := range tab.slots {
		if s.h == 0 {
			continue
		}
		seen++
		if _, ok := model[s.h]; !ok && !(s.h == 1 && hasZero(model)) {
			t.Fatalf("slot holds %#x, which the model lacks", s.h)
		}
	}
	if seen != len(model) {
		t.Fatalf("%d occupied slots, model has %d", seen, len(model))
	}
	if len(tab.slots) > 0 && tab.n*8 > len(tab.slots)*7 {
		t.Fatalf("load %d/%d above 7/8", tab.n, len(tab.slots))
	}
}

func hasZero(m map[uint64]int64) bool { _, ok := m[0]; return ok }

// applyOps drives the table and a model with operations decoded from data:
// each op is a byte (kind) and a byte (which of a few keys). Keys share
// their top bits in clusters, so probes collide and deletions shift.
func applyOps(t *testing.T, data []byte) {
	tab := &counts{}
	model := map[uint64]int64{}
	key := func(b byte) uint64 {
		// 4 clusters of 64 keys; the cluster sets the top bits (the home
		// slot), the rest differ low down.
		return uint64(b>>6)<<62 | uint64(b&63)<<3 | 5
	}
	for len(data) >= 2 {
		op, k := data[0], key(data[1])
		data = data[2:]
		switch op % 5 {
		case 0, 1:
			c := int64(op) + 1
			tab.set(k, c)
			model[k] = c
		case 2:
			if got := tab.del(k); got != (model[k] != 0) {
				t.Fatalf("del(%#x) = %v, model had it: %v", k, got, model[k] != 0)
			}
			delete(model, k)
		case 3:
			before := tab.n
			if i, v, ok := tab.cheapest(k, uint64(op)<<56, int(op%7)+1); ok {
				if got := uint64(tab.slots[i].c); got != v {
					t.Fatalf("cheapest(%#x) = slot %d, value %d; the slot holds %d", k, i, v, got)
				}
				tab.remove(i)
				if tab.n != before-1 {
					t.Fatalf("cheapest and remove: n %d -> %d", before, tab.n)
				}
				for h := range model {
					if _, ok := tab.get(h); !ok {
						if h == k {
							t.Fatalf("cheapest(%#x) chose the key itself", k)
						}
						if uint64(model[h]) != v {
							t.Fatalf("cheapest(%#x) = value %d, but removed %#x holds %d", k, v, h, model[h])
						}
						delete(model, h)
					}
				}
			} else if len(model) > 1 || len(model) == 1 && model[k] == 0 {
				t.Fatalf("cheapest found nothing in %d entries", len(model))
			}
		case 4:
			if op > 200 {
				tab.reset()
				clear(model)
			}
		}
		checkCounts(t, tab, model)
	}
}

func TestCountsRandomOps(t *testing.T) {
	t.Parallel()
	for seed := range uint64(50) {
		r := rand.New(rand.NewPCG(seed, 1))
		data := make([]byte, 4000)
		for i := range data {
			data[i] = byte(r.IntN(256))
		}
		applyOps(t, data)
	}
}

func TestCountsZeroHash(t *testing.T) {
	t.Parallel()
	var tab counts
	tab.set(0, 7)
	if c, ok := tab.get(0); !ok || c != 7 {
		t.Fatalf("get(0) = %d, %v; want 7, true", c, ok)
	}
	if !tab.del(0) || tab.n != 0 {
		t.Fatal("del(0) failed")
	}
}

func TestCountsGrowsAndFrees(t *testing.T) {
	t.Parallel()
	var tab counts
	r := rand.New(rand.NewPCG(7, 7))
	model := map[uint64]int64{}
	for i := range 10_000 {
		h := r.Uint64()
		tab.set(h, int64(i))
		model[h] = int64(i)
	}
	checkCounts(t, &tab, model)
	tab.reset()
	if tab.slots != nil || tab.n != 0 {
		t.Fatalf("reset of a large table kept %d slots", len(tab.slots))
	}
	tab.set(1, 1)
	tab.reset()
	if len(tab.slots) != minSlots || tab.n != 0 {
		t.Fatalf("reset of a small table: %d slots, n %d; want %d slots kept, n 0", len(tab.slots), tab.n, minSlots)
	}
}

func FuzzCounts(f *testing.F) {
	f.Add([]byte{0, 1, 0, 65, 0, 129, 2, 1, 3, 65, 0, 1})
	seed := make([]byte, 512)
	binary.LittleEndian.PutUint64(seed, 0x0123456789abcdef)
	f.Add(seed)
	f.Fuzz(applyOps)
}
