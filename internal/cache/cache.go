package cache

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
)

// ways is how many entries a set holds: eight pointers, one cache line.
const ways = 8

// groupSets is how many sets are allocated at once, on the first Add to
// any of them: 64 sets of eight slots, about 5 KiB.
const groupSets = 64

// stripes spread the hit and miss counts over cache lines, so that
// cores counting at once seldom write the same line.
const stripes = 8

// A Map is a bounded map from K to V. Get takes no lock and does not
// allocate; Add allocates one entry and, in a full set, evicts one. The
// zero Map keeps nothing: build one with New.
type Map[K comparable, V any] struct {
	hash   func(K) uint64
	nsets  uint64
	groups []atomic.Pointer[group[K, V]]
	mu     sync.Mutex // allocates groups
	kept   atomic.Int64
	counts [stripes]counts
}

// counts are one stripe's hits and misses, alone on a cache line.
type counts struct {
	hits, misses atomic.Int64
	_            [48]byte
}

type group[K comparable, V any] [groupSets]set[K, V]

// A set holds up to ways entries; mu orders its writers, and hand is
// CLOCK's next slot.
type set[K comparable, V any] struct {
	slots [ways]atomic.Pointer[entry[K, V]]
	mu    sync.Mutex
	hand  uint8
}

type entry[K comparable, V any] struct {
	hash uint64
	key  K
	val  V
	used atomic.Bool // hit since CLOCK's hand last passed
}

// New returns a map of at most bound entries, rounded down to a whole
// number of sets of eight (at least one set),
// which finds a key's set by hash: a hash of the whole key, seeded (see
// hash/maphash) so that no client can choose keys of one set.
func New[K comparable, V any](bound int, hash func(K) uint64) *Map[K, V] {
	nsets := uint64(max(bound/ways, 1))
	return &Map[K, V]{hash: hash, nsets: nsets, groups: make([]atomic.Pointer[group[K, V]], (nsets+groupSets-1)/groupSets)}
}

// index returns the two sets a key of hash h may be kept in: one picked
// by h's top half, one by its bottom half, each scaled to [0, nsets).
// With two choices a new entry goes to the set with room, so that sets
// seldom overflow while the map is below its bound.
func (m *Map[K, V]) index(h uint64) (uint64, uint64) {
	return (h >> 32) * m.nsets >> 32, (h & 0xffffffff) * m.nsets >> 32
}

// set returns set i, nil if its group was never allocated.
func (m *Map[K, V]) set(i uint64) *set[K, V] {
	if g := m.groups[i/groupSets].Load(); g != nil {
		return &g[i%groupSets]
	}
	return nil
}

// alloc returns set i, allocating its group if need be.
func (m *Map[K, V]) alloc(i uint64) *set[K, V] {
	gp := &m.groups[i/groupSets]
	g := gp.Load()
	if g == nil {
		m.mu.Lock()
		if g = gp.Load(); g == nil {
			g = new(group[K, V])
			gp.Store(g)
		}
		m.mu.Unlock()
	}
	return &g[i%groupSets]
}

// find returns k's entry in s, nil if s does not hold it.
func (s *set[K, V]) find(h uint64, k K) *entry[K, V] {
	if s == nil {
		return nil
	}
	for i := range s.slots {
		if e := s.slots[i].Load(); e != nil && e.hash == h && e.key == k {
			return e
		}
	}
	return nil
}

// full returns how many of s's slots hold an entry: they fill in order
// and are never emptied (an eviction replaces an entry), so the first
// empty slot is at that index; ways when s is full.
func (s *set[K, V]) full() int {
	for n := range s.slots {
		if s.slots[n].Load() == nil {
			return n
		}
	}
	return ways
}

// Get returns k's value, and whether the map holds one; each call counts
// as a hit or a miss (Stats).
func (m *Map[K, V]) Get(k K) (V, bool) {
	h := m.hash(k)
	i, j := m.index(h)
	e := m.set(i).find(h, k)
	if e == nil && j != i {
		e = m.set(j).find(h, k)
	}
	if e == nil {
		m.counts[rand.Uint32()%stripes].misses.Add(1)
		var zero V
		return zero, false
	}
	if !e.used.Load() {
		e.used.Store(true)
	}
	m.counts[rand.Uint32()%stripes].hits.Add(1)
	return e.val, true
}

// Hit counts a hit of a lookup that found its value in front of the
// map (a Recent), as Get counts one.
func (m *Map[K, V]) Hit() { m.counts[rand.Uint32()%stripes].hits.Add(1) }

// Add keeps v under k unless k has a value already, which it returns (a
// racing writer's); otherwise it returns v. It goes to the emptier of
// k's two sets; when both are full, it evicts from one (by
// h's lowest bit) the first entry CLOCK's hand finds unused since it
// last passed.
func (m *Map[K, V]) Add(k K, v V) V {
	h := m.hash(k)
	i, j := m.index(h)
	a, b := m.alloc(min(i, j)), m.alloc(max(i, j))
	// Both sets' locks, in index order, so that two writers of one key
	// never keep it twice.
	a.mu.Lock()
	defer a.mu.Unlock()
	if b != a {
		b.mu.Lock()
		defer b.mu.Unlock()
	}
	if e := a.find(h, k); e != nil {
		return e.val
	}
	if e := b.find(h, k); e != nil {
		return e.val
	}
	// The emptier of the two sets takes it: with two choices, each to
	// the less loaded, sets seldom overflow below the bound (the first
	// with room left 3.5 % of 100,000 keys unkept in 131,072 slots).
	to, n := a, a.full()
	if nb := b.full(); nb < n {
		to, n = b, nb
	}
	if n < ways {
		to.slots[n].Store(&entry[K, V]{hash: h, key: k, val: v})
		m.kept.Add(1)
		return v
	}
	s := a
	if h&1 == 1 {
		s = b
	}
	// Second chance: at most one pass clears every used mark, so the
	// hand stops within 2·ways steps.
	for {
		n := int(s.hand)
		s.hand = uint8((n + 1) % ways)
		if e := s.slots[n].Load(); e.used.Load() {
			e.used.Store(false)
			continue
		}
		s.slots[n].Store(&entry[K, V]{hash: h, key: k, val: v})
		return v
	}
}

// Stats are a map's counts: the entries it keeps, and the lookups (Get)
// that found their key and that did not, since it was made.
type Stats struct {
	Kept, Hits, Misses int64
}

// Stats returns the map's counts. Taken while others look up, the hits
// and misses are each exact at some instant during the call, not at
// one.
func (m *Map[K, V]) Stats() Stats {
	s := Stats{Kept: m.kept.Load()}
	for i := range m.counts {
		s.Hits += m.counts[i].hits.Load()
		s.Misses += m.counts[i].misses.Load()
	}
	return s
}

// Bound returns how many entries the map keeps at most: its bound
// rounded down to a whole number of sets (at least one).
func (m *Map[K, V]) Bound() int { return int(m.nsets) * ways }

// Mix folds x into the hash h: a step of a multiply-xorshift hash, for
// keys made of a seeded hash of their strings (hash/maphash) and
// numbers.
func Mix(h, x uint64) uint64 {
	h = (h ^ x) * 0x9e3779b97f4a7c15
	return h ^ h>>29
}
