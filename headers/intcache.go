package headers

import (
	"strconv"
	"sync/atomic"
)

// intCache remembers the decimal form of a few integers, for header values
// that repeat across requests: a policy's limit, the second a window ends.
// Formatting them anew for every response was a third of Write's work. It
// is direct-mapped and lock-free; a miss formats the number and replaces
// the slot (one allocation, once per limit or window rather than per
// request). The zero intCache is empty and ready.
type intCache struct {
	slots [16]atomic.Pointer[intEntry]
}

type intEntry struct {
	v int64
	s string
}

// format returns strconv.FormatInt(v, 10).
func (c *intCache) format(v int64) string {
	slot := &c.slots[uint64(v)*0x9E3779B97F4A7C15>>60]
	if e := slot.Load(); e != nil && e.v == v {
		return e.s
	}
	e := &intEntry{v: v, s: strconv.FormatInt(v, 10)}
	slot.Store(e)
	return e.s
}
