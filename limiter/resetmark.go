package limiter

// A Reset starts exactly one fresh budget: a return of a charge decided
// before it (a refund, a settle below its reservation) gives nothing
// back into the counts after it, which the Reset's caller meant to start
// from zero; otherwise a request in flight across a Reset would hand its
// cost to the customer's fresh budget, beyond the limit. So the memory
// store marks each window a Reset cleared with the Reset's instant, and
// a return to that window of a decision made at or before the mark
// returns nothing. The Redis store marks its windows in Redis the same
// way (redisstore's reset.lua).
//
// Marks are few (one per window of a key a Reset named, while the window
// lasts) and live beside the shard's tables: the shard's lock guards
// them, and a Reset prunes those of ended windows once there are many.

// A resetKey names one window of one key: the key's hash under its
// policy and the window's table key (span.key).
type resetKey struct {
	h      uint64
	window int64
}

// A resetMark is the instant of a window's last Reset, and the end of
// the window it fell in: after that no return can reach it.
type resetMark struct {
	at, until int64
}

// pruneMarksAt is how many marks a shard keeps before a Reset prunes the
// ended ones.
const pruneMarksAt = 64

// markReset marks every window of p for key hash h as reset at ms. The
// shard's lock is held.
func (sh *memShard) markReset(h uint64, p *Policy, ms int64) {
	if sh.resets == nil {
		sh.resets = make(map[resetKey]resetMark)
	}
	if len(sh.resets) >= pruneMarksAt {
		for k, m := range sh.resets {
			if ms >= m.until {
				delete(sh.resets, k)
			}
		}
	}
	for i := range p.spans {
		sp := &p.spans[i]
		end := sp.windowEnd(ms)
		k := resetKey{h, sp.key}
		if old, ok := sh.resets[k]; !ok || old.at < ms {
			sh.resets[k] = resetMark{at: ms, until: end}
		}
	}
}

// resetSince reports whether key hash h's window of sp was reset at or
// after at, the instant a charge to it was decided: the charge was
// counted in a budget that has ended, and returns nothing. The shard's
// lock is held.
func (sh *memShard) resetSince(h uint64, sp *span, at int64) bool {
	if len(sh.resets) == 0 {
		return false
	}
	m, ok := sh.resets[resetKey{h, sp.key}]
	return ok && m.at >= at
}
