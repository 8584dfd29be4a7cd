package limiter

// counts is an open-addressing hash table from 64-bit key hashes to counts,
// with linear probing and backward-shift deletion. It replaces a Go map on
// the hot path for two reasons, both measured (see the commit that added
// it): one probe finds the slot that is then read and written, where a map
// costs a lookup and an assignment; and 16-byte slots at a load of 7/16 to
// 7/8 hold a counter in 18 to 37 bytes, where the map needed 37.7 at a
// million keys.
//
// Hash 0 marks an empty slot, so a key whose hash is 0 is stored as 1.
// Slots are indexed by the hash's top bits: the bottom bits chose the
// shard, and are the same for every key in it.
//
// The zero counts is an empty table. It is not safe for concurrent use; the
// shard's lock guards it.
type counts struct {
	slots []slot
	n     int
	shift uint // 64 - log2(len(slots))
}

type slot struct {
	h uint64
	c int64
}

const minSlots = 8

func fix(h uint64) uint64 {
	if h == 0 {
		return 1
	}
	return h
}

// find returns the index of h's slot, or of the empty slot where h would
// go, and whether h is present. The table must have slots.
func (t *counts) find(h uint64) (int, bool) {
	mask := len(t.slots) - 1
	for i := int(h >> t.shift); ; i = (i + 1) & mask {
		switch t.slots[i].h {
		case h:
			return i, true
		case 0:
			return i, false
		}
	}
}

// get returns h's count, if present.
func (t *counts) get(h uint64) (int64, bool) {
	if t.n == 0 {
		return 0, false
	}
	h = fix(h)
	i, ok := t.find(h)
	return t.slots[i].c, ok
}

// set stores h's count, inserting h if absent.
func (t *counts) set(h uint64, c int64) {
	h = fix(h)
	if len(t.slots) > 0 {
		if i, ok := t.find(h); ok {
			t.slots[i].c = c
			return
		}
	}
	if (t.n+1)*8 > len(t.slots)*7 {
		t.grow()
	}
	i, _ := t.find(h)
	t.slots[i] = slot{h: h, c: c}
	t.n++
}

func (t *counts) grow() {
	old := t.slots
	size := max(minSlots, 2*len(old))
	t.slots = make([]slot, size)
	t.shift = 64 - uint(log2(size))
	for _, s := range old {
		if s.h != 0 {
			i, _ := t.find(s.h)
			t.slots[i] = s
		}
	}
}

// del removes h, if present, and reports whether it was.
func (t *counts) del(h uint64) bool {
	if t.n == 0 {
		return false
	}
	i, ok := t.find(fix(h))
	if ok {
		t.remove(i)
	}
	return ok
}

// remove empties slot i and shifts back the slots after it that would not
// be found past the hole.
func (t *counts) remove(i int) {
	mask := len(t.slots) - 1
	for j := (i + 1) & mask; t.slots[j].h != 0; j = (j + 1) & mask {
		home := int(t.slots[j].h >> t.shift)
		// Move j into the hole at i unless its home lies cyclically in
		// (i, j]: then it is still found from its home.
		if (j-home)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot{}
	t.n--
}

// cheapest returns the index and value of the least value among probes
// sampled slots, empty ones and skip's left out, and whether there was
// one. Values compare as unsigned numbers; an entry holding the greatest,
// ^0, is taken only by the fallback below. The slots read are those the top bits of from, from + φ·2^64,
// from + 2φ·2^64 ... pick (a Weyl sequence, spread over the table whatever
// from is), so every entry is as likely to be sampled as any other.
// Taking the first entry after a point instead would favour the heads of
// runs, and evicting the cheap ones among those would leave the dear
// entries at the heads, sampled ever more often. The probes are a fixed
// number, not a number of entries found, so that the loop has no branch
// on what it reads, which a random table would mispredict. If every slot
// read was empty or skip's, the first other entry after the last is taken.
func (t *counts) cheapest(skip, from uint64, probes int) (best int, v uint64, ok bool) {
	if t.n == 0 {
		return 0, 0, false
	}
	skip = fix(skip)
	v = ^uint64(0)
	i := 0
	for range probes {
		i = int(from >> t.shift)
		from += 0x9E3779B97F4A7C15
		s := t.slots[i]
		c := uint64(s.c)
		if s.h == 0 {
			c = ^uint64(0)
		}
		if s.h == skip {
			c = ^uint64(0)
		}
		if c < v {
			best = i
		}
		v = min(v, c)
	}
	if v != ^uint64(0) {
		return best, v, true
	}
	mask := len(t.slots) - 1
	for range len(t.slots) {
		if s := t.slots[i]; s.h != 0 && s.h != skip {
			return i, uint64(s.c), true
		}
		i = (i + 1) & mask
	}
	return 0, 0, false
}

// reset empties the table, keeping its slots if it held few entries and
// freeing them otherwise, so that a burst of keys gives its memory back.
func (t *counts) reset() {
	if t.n <= smallTable && len(t.slots) <= 4*smallTable {
		clear(t.slots)
	} else {
		*t = counts{}
	}
	t.n = 0
}

func log2(n int) int {
	k := 0
	for n > 1 {
		n >>= 1
		k++
	}
	return k
}

// lookup returns the slot index for h (allocating the first slots if the
// table has none), h's count and whether h is present. The index is valid
// until the table next changes shape (set, del, remove, reset).
func (t *counts) lookup(h uint64) (int, int64, bool) {
	if t.slots == nil {
		t.slots = make([]slot, minSlots)
		t.shift = 64 - uint(log2(minSlots))
	}
	i, ok := t.find(fix(h))
	return i, t.slots[i].c, ok
}
