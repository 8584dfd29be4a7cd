package cache

import (
	"hash/maphash"
	"sync/atomic"
)

// MemoBound is how many values a Memo keeps: as many as a service keeps
// resolutions of plans and zones when it sizes them for a million pairs
// (docs/performance.md). A Memo allocates its sets as they fill, so an
// idle bound costs 16 KiB.
const MemoBound = 1 << 20

// A Memo remembers a value computed from each key, up to MemoBound of
// them, past which each new one evicts one not used lately (Map): for
// what a store or a header writer derives from a *limiter.Policy, of
// which a lookup of plans makes one per plan and zone. The zero Memo is
// ready; it makes its Map on first use.
type Memo[K comparable, V any] struct {
	m atomic.Pointer[Map[K, V]]
}

// Get returns the value kept for k, computing and keeping it if there
// is none.
func (c *Memo[K, V]) Get(k K, compute func(K) V) V {
	m := c.m.Load()
	if m == nil {
		seed := maphash.MakeSeed()
		m = New[K, V](MemoBound, func(k K) uint64 { return maphash.Comparable(seed, k) })
		if !c.m.CompareAndSwap(nil, m) {
			m = c.m.Load()
		}
	}
	if v, ok := m.Get(k); ok {
		return v
	}
	return m.Add(k, compute(k))
}

// Stats returns the counts of the Memo's Map (zero before first use).
func (c *Memo[K, V]) Stats() Stats {
	if m := c.m.Load(); m != nil {
		return m.Stats()
	}
	return Stats{}
}
