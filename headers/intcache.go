package headers

import (
	"math/rand/v2"
	"strconv"
	"sync/atomic"
)

// intCache remembers the decimal form of a few integers, for header values
// that repeat across requests: a policy's limit, the second a window ends.
// Formatting them anew for every response was a third of Write's work. It
// is lock-free and two-way set-associative: a number may sit in either
// slot of its set, so that two numbers of one set (a limit and the
// current window's end, which changes every window) do not evict each
// other on every request, as they did while each number had one slot
// (three allocations per response, for the whole window, in one window
// of sixteen). A miss formats the number (one allocation, once per limit
// or window rather than per request) and takes an empty slot of its set,
// or one chosen at random, so that two numbers asked for in turn settle
// in the two slots after a few misses. The zero intCache is empty and
// ready.
type intCache struct {
	sets [16][2]atomic.Pointer[intEntry]
}

type intEntry struct {
	v int64
	s string
}

// format returns strconv.FormatInt(v, 10).
func (c *intCache) format(v int64) string {
	set := &c.sets[uint64(v)*0x9E3779B97F4A7C15>>60]
	for i := range set {
		if e := set[i].Load(); e != nil && e.v == v {
			return e.s
		}
	}
	e := &intEntry{v: v, s: strconv.FormatInt(v, 10)}
	switch {
	case set[0].Load() == nil:
		set[0].Store(e)
	case set[1].Load() == nil:
		set[1].Store(e)
	default:
		set[rand.IntN(2)].Store(e)
	}
	return e.s
}
