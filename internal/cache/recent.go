package cache

import (
	"hash/maphash"
	"math/rand/v2"
	"sync/atomic"
	"unsafe"
)

// A Recent remembers, in each of a fixed number of slots, a key's
// address and the value last found for it and a string: a lookup by
// identity in a hash and a few loads, for keys whose address stands for
// their contents (an object never written once in use, such as a
// limiter.Plan), in front of a Map keyed by contents. The slot is
// picked by the address and the string (a zone), which the caller
// checks in the value: a Recent keeps the key's address, not the
// string. Get takes no lock, never allocates and never returns a value
// torn between two Puts; Put overwrites its slot.
//
// A Recent holds its keys and values alive until they are overwritten:
// at most its number of slots of each, beyond the Map's bound.
type Recent[K, V any] struct {
	slots []recentSlot[K, V]
	mask  uint64
	seed  maphash.Seed
}

// A recentSlot is a sequence lock over a key and its value: seq is odd
// while a Put writes them, and moves on after, so that a Get that read
// both between two equal even values of seq read one Put's pair.
type recentSlot[K, V any] struct {
	seq atomic.Uint64
	key atomic.Pointer[K]
	val atomic.Pointer[V]
}

// NewRecent returns a Recent of n slots, n a power of two.
func NewRecent[K, V any](n int) *Recent[K, V] {
	if n <= 0 || n&(n-1) != 0 {
		panic("cache.NewRecent: slots must be a power of two")
	}
	return &Recent[K, V]{slots: make([]recentSlot[K, V], n), mask: uint64(n - 1), seed: maphash.MakeSeed()}
}

// slot returns the slot of k and str: by a seeded hash of str mixed
// with k's address (Go's heap objects do not move, and the slot holds k
// alive while it names it).
func (r *Recent[K, V]) slot(k *K, str string) *recentSlot[K, V] {
	h := Mix(maphash.String(r.seed, str), uint64(uintptr(unsafe.Pointer(k))))
	return &r.slots[h&r.mask]
}

// Get returns the value last put for k with str, nil if its slot holds
// another key, or is being written; the caller checks that the value is
// of str.
func (r *Recent[K, V]) Get(k *K, str string) *V {
	s := r.slot(k, str)
	n := s.seq.Load()
	if n&1 != 0 || s.key.Load() != k {
		return nil
	}
	v := s.val.Load()
	if s.seq.Load() != n {
		return nil
	}
	return v
}

// putEvery is how seldom Put writes: one call in putEvery, at random, so
// that keys seen once (a fresh object per request) seldom take a slot
// from keys seen often, and cost little when they do not, while a key
// seen often is put within a few calls.
const putEvery = 8

// Put keeps v for k and str, one call in putEvery, unless another Put
// is writing its slot.
func (r *Recent[K, V]) Put(k *K, str string, v *V) {
	if rand.Uint32()%putEvery != 0 {
		return
	}
	s := r.slot(k, str)
	n := s.seq.Load()
	if n&1 != 0 || !s.seq.CompareAndSwap(n, n+1) {
		return
	}
	s.key.Store(k)
	s.val.Store(v)
	s.seq.Store(n + 2)
}
