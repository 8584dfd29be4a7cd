package limiter

import (
	"context"
	"sync"
)

// slotTable holds a MemoryStore's in-flight slots: per key and cap, the
// number held, in shards of their own rather than the counters'. A slot
// is never evicted (that would let one more request in than the cap),
// and a counter's eviction must always find another counter to take.
//
// A key holds an entry only while it holds a slot: the last release
// removes it, and a table left mostly empty by a burst is shrunk, so
// keys with nothing in flight hold no memory. Entries are bounded as
// counters are, by WithMaxKeys per shard: a key that would need one more
// entry in a full shard is an error (ErrFull), never an eviction.
//
// Nothing in it reads a clock: a slot lives until it is released, so no
// clock step frees one early. The zero slotTable is made on first use.
type slotTable struct {
	once     sync.Once
	shards   []slotShard
	mask     uint64
	perShard int
}

type slotShard struct {
	mu sync.Mutex
	t  counts // key hash → slots held, never 0
	_  [16]byte
}

// table returns s's slot table, made on the first call.
func (s *MemoryStore) table() *slotTable {
	t := &s.slots
	t.once.Do(func() {
		t.shards = make([]slotShard, len(s.shards))
		t.mask, t.perShard = s.mask, s.perShard
	})
	return t
}

// AcquireSlot takes one of req.Max slots of req.Key, atomically under
// the lock of the key's shard. See SlotStore.
func (s *MemoryStore) AcquireSlot(_ context.Context, req SlotRequest) (Slot, error) {
	if s.closed.Load() {
		return Slot{}, ErrClosed
	}
	if err := req.check(); err != nil {
		return Slot{}, err
	}
	if req.Peek {
		return Slot{Held: s.heldSlots(req), Max: req.Max}, nil
	}
	t := s.table()
	h := s.hash(req.Key, req.Policy)
	sh := &t.shards[h&t.mask]
	sh.mu.Lock()
	i, n, found := sh.t.lookup(h)
	switch {
	case n >= req.Max:
		sh.mu.Unlock()
		return Slot{Held: n, Max: req.Max}, nil
	case found:
		sh.t.slots[i].c = n + 1
	case sh.t.n >= t.perShard:
		sh.mu.Unlock()
		return Slot{}, ErrFull
	case (sh.t.n+1)*8 <= len(sh.t.slots)*7: // into the empty slot lookup found
		sh.t.slots[i] = slot{h: fix(h), c: 1}
		sh.t.n++
	default:
		sh.t.set(h, 1)
	}
	sh.mu.Unlock()
	return Slot{Acquired: true, Held: n + 1, Max: req.Max, Token: h}, nil
}

// ReleaseSlot gives back sl, a slot AcquireSlot granted for req: its
// Token is the key's hash in the store, which spares hashing the key
// again. See SlotStore. A closed store has nothing to give back to.
func (s *MemoryStore) ReleaseSlot(_ context.Context, req SlotRequest, sl Slot) error {
	if !sl.Acquired || s.closed.Load() {
		return nil
	}
	if err := req.check(); err != nil {
		return err
	}
	t := s.table()
	h := sl.Token
	if h == 0 { // a Slot not made by AcquireSlot (or a hash of 0)
		h = s.hash(req.Key, req.Policy)
	}
	sh := &t.shards[h&t.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.t.n == 0 {
		return nil
	}
	i, found := sh.t.find(fix(h))
	switch {
	case !found:
	case sh.t.slots[i].c > 1:
		sh.t.slots[i].c--
	default:
		sh.t.remove(i)
		sh.t.shrink()
	}
	return nil
}

// heldSlots returns how many slots req.Key holds under the cap
// req.Policy: AcquireSlot's answer to a peek. See SlotStore.
func (s *MemoryStore) heldSlots(req SlotRequest) int64 {
	t := s.table()
	h := s.hash(req.Key, req.Policy)
	sh := &t.shards[h&t.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	n, _ := sh.t.get(h)
	return n
}

// shrink gives back the slots of a table left mostly empty, beyond the
// size reset keeps: all of them once it is empty, else half at a time
// while it holds less than an eighth of its slots, so that a burst of
// keys does not hold its memory for ever, at an amortised O(1) per
// removal. A small table is kept as it is: its slots are already empty.
func (t *counts) shrink() {
	switch {
	case len(t.slots) <= 4*smallTable:
	case t.n == 0:
		*t = counts{}
	case t.n*8 < len(t.slots):
		old := t.slots
		t.slots = make([]slot, len(old)/2)
		t.shift++
		for _, s := range old {
			if s.h != 0 {
				i, _ := t.find(s.h)
				t.slots[i] = s
			}
		}
	}
}

// keys returns how many keys hold slots.
func (t *slotTable) keys() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		n += sh.t.n
		sh.mu.Unlock()
	}
	return n
}

var _ SlotStore = (*MemoryStore)(nil)
