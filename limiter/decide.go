package limiter

import (
	"time"

	"github.com/fixedwindow/ratelimit/internal/window"
)

// State is what a store keeps for one key in one window: 16 bytes.
type State struct {
	// Window is the window's id: floor(unix milliseconds / window length
	// in milliseconds); for a calendar rate, the window's start in Unix
	// milliseconds, which no other window of the rate has.
	Window int64
	// Count is the cost charged in that window.
	Count int64
}

// msBound keeps instants within ±2^62 ms (146 million years) so that no
// window arithmetic can overflow.
const msBound = 1 << 62

// Decide is the fixed-window rule as a pure function. Given a policy, the
// stored state of each of its windows for one key (prior[i] belongs to
// p.Rate(i); a state from another window counts as empty), the instant of
// the request and its cost (> 0), it returns the states to store and the
// decision. When the request is refused, next holds the prior counts of the
// current windows and nothing need be written.
//
// A window refuses when cost > limit (the decision then says
// CostExceedsLimit, with no RetryAfter: no wait helps), or when
// count > limit − cost: the
// comparison is arranged so that nothing can overflow, however large a
// stored count is. A negative stored count is corrupt and treated as a full
// window, so corruption fails closed. A count above the limit (a limit
// lowered under it) refuses every cost and reads as Remaining 0.
func Decide(p *Policy, prior [MaxWindows]State, now time.Time, cost int64) (next [MaxWindows]State, d Decision) {
	decide(p, &prior, now, cost, &next, &d)
	return next, d
}

// decide is Decide writing through pointers, so that stores on the hot
// path copy no arrays. prior and next may be the same array.
func decide(p *Policy, prior *[MaxWindows]State, now time.Time, cost int64, next *[MaxWindows]State, d *Decision) {
	ms := now.UnixMilli()
	sub := time.Duration(now.Nanosecond() % int(time.Millisecond))
	if ms > msBound || ms < -msBound {
		ms = max(min(ms, msBound), -msBound)
		sub = 0
	}
	*d = Decision{Policy: p, nowMs: ms, windows: true}
	deny, pick := -1, -1
	never := false // a window whose limit the cost exceeds
	var ends [MaxWindows]int64
	for i := range p.rates {
		limit := p.rates[i].Limit
		st := prior[i]
		sp := &p.spans[i]
		wms, maxID := sp.ms, sp.maxID
		var end int64
		// Most requests fall in the window their state already holds:
		// confirm that with a multiplication, and divide only when not.
		// A calendar rate's maxID is −1: it never passes, and its
		// window comes from its cache.
		if st.Window >= -maxID && st.Window <= maxID && ms >= st.Window*wms && ms-st.Window*wms < wms {
			end = st.Window*wms + wms
		} else {
			var id int64
			if sp.cal != nil {
				id, end = sp.cal.Window(ms)
			} else {
				id, _, end = window.ID(ms, wms)
			}
			if st.Window != id {
				st = State{Window: id}
			}
		}
		ends[i] = end
		next[i] = st
		count := st.Count
		if count < 0 {
			count = limit // corrupt: a full window, which refuses every cost
		}
		// What is left before this request, below zero for a key in
		// debt (a limit lowered under its count, a settle past it):
		// Used reads it back, Remaining clamps it.
		d.remaining[i] = limit - count
		switch {
		case cost > limit:
			// No wait helps: this window decides the refusal, the
			// first of them if several.
			if !never {
				deny, never = i, true
			}
		case count > limit-cost && !never:
			if deny < 0 || end > ends[deny] {
				deny = i
			}
		}
	}
	if deny >= 0 {
		d.fill(deny, ends[deny], ms, sub)
		if never {
			d.CostExceedsLimit, d.RetryAfter = true, 0
		}
		return
	}
	d.Allowed = true
	for i := range p.rates {
		next[i].Count += cost
		d.remaining[i] -= cost
		// Closest to exhaustion: least remaining; on a tie the longer
		// window, whose reset is later (a calendar window by its
		// nominal length: a day 24 h, a month 28 days).
		if pick < 0 || d.remaining[i] < d.remaining[pick] ||
			d.remaining[i] == d.remaining[pick] && p.spans[i].ms > p.spans[pick].ms {
			pick = i
		}
	}
	d.fill(pick, ends[pick], ms, sub)
	d.RetryAfter = 0
}

// fill copies window i's status to the decision's headline fields.
func (d *Decision) fill(i int, end, ms int64, sub time.Duration) {
	r := &d.Policy.rates[i]
	d.Limit, d.Remaining, d.Window = r.Limit, max(0, d.remaining[i]), r.Window
	if r.Window == 0 { // a calendar rate: the length of the window decided in
		start, _ := d.Policy.spans[i].cal.Window(ms)
		d.Window = time.Duration(end-start) * time.Millisecond
	}
	d.ResetAt = time.UnixMilli(end)
	d.RetryAfter = time.Duration(end-ms)*time.Millisecond - sub
}
