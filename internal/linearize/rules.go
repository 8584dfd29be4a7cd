package linearize

import "slices"

// The policy's rule, one operation at a time (Model): what each kind of
// operation may answer, and what it leaves.

// leaseGrace is how long after another replica's Reset or settle a
// replica may still spend a lease granted before it: a lease lasts a
// second (maxLocalAge) from the request that asked for it, which came
// before; the replicas' clocks, moved one after the other, differ by
// less than a tenth of a second.
const leaseGrace = maxLocalAge + 100

// leaseEarly is how long before its call an admission from a lease on
// Redis's clock may be dated: by its replica's estimate of TIME, never
// after TIME, behind it by at most the round trip of the grant it came
// from (under the store's timeout, 100 ms in the runs) and 2 ms of
// rounding. It is not held to the latest instant decided.
const leaseEarly = 100 + 2

// admits reports whether counts (before the request) admit cost under
// who's limits: no window over limit − cost.
func (sp *Spec) admits(who int, counts []int64, cost int64) bool {
	for i, c := range counts {
		if l := sp.limit(who, i); cost > l || c > l-cost {
			return false
		}
	}
	return true
}

// decide steps an Allow, a Peek or a Reserve.
func (sp *Spec) decide(s state, in Input, out Output) []state {
	if out.Unknown {
		return sp.maybeCharged(s, in)
	}
	w := who(&in, &out)
	leased := sp.ServerClock && sp.Lease > 0 && w < 0 && out.Allowed && in.Kind != Peek &&
		out.At >= in.At-leaseEarly && out.At <= max(in.AtHi, in.At) // perhaps from a lease: see leaseEarly
	if w >= 0 && sp.Divisor == 0 || len(out.Used) != len(sp.Windows) || !leased && !sp.decidedAt(&s, &in, w, out.At) {
		return nil
	}
	if sp.Lease > 0 && w < 0 {
		return sp.decideLeased(s, in, out)
	}
	var next []state
	for _, cnt := range sp.windowCounts(&s, w, out.At, in.Epoch) {
		ok := sp.admits(w, cnt, in.Cost)
		if ok != out.Allowed || !usedIs(out.Used, cnt, ok, in.Cost) {
			continue
		}
		n := s.clone()
		charged := ok && in.Kind != Peek
		sp.write(&n, w, out.At, cnt, charged, in.Cost, in.Epoch)
		if sp.Stale > 0 && w < 0 {
			sp.note(&n, &in, out.At, cnt, charged)
		}
		next = append(next, n)
	}
	if len(next) == 0 && sp.Stale > 0 && w < 0 && !out.Allowed && sp.staleRefusal(&s, &in) {
		next = append(next, s.clone())
	}
	return next
}

// usedIs reports whether used is what counts become by a decision that
// admitted (ok) cost or not.
func usedIs(used, counts []int64, ok bool, cost int64) bool {
	for i, c := range counts {
		if ok {
			c += cost
		}
		if used[i] != c {
			return false
		}
	}
	return true
}

// write leaves in n the counts a decision at `at` found (cnt), cost added
// when charged: on a store that keeps one window per rate the windows
// decided in are then the ones kept; on Redis's clock the decision is
// the latest instant.
func (sp *Spec) write(n *state, who int, at int64, cnt []int64, charged bool, cost int64, epoch int) {
	single := sp.single(who)
	for i, w := range sp.Windows {
		c := cnt[i]
		if charged {
			c += cost
		}
		switch id := floorDiv(at, w); {
		case c != 0 || charged:
			n.set(who, i, id, c, epoch, single)
		case single:
			n.counts = slices.DeleteFunc(n.counts, func(k count) bool { return k.who == who && k.rate == i })
		}
	}
	if who < 0 && sp.ServerClock {
		n.time = max(n.time, at)
		if k := slices.IndexFunc(n.wipes, func(w wipe) bool { return w.who < 0 }); k >= 0 {
			n.wipes[k].hi = min(n.wipes[k].hi, max(n.wipes[k].lo, at)) // the Reset ran no later
		}
	}
}

// maybeCharged steps a decision that failed: it may have been decided
// (and charged, when it admitted) at any instant it could be decided at;
// step adds that it may not have happened.
func (sp *Spec) maybeCharged(s state, in Input) []state {
	var next []state
	for _, at := range sp.instants(&s, &in, -1) {
		for _, cnt := range sp.windowCounts(&s, -1, at, in.Epoch) {
			if sp.Lease > 0 && (!sp.leaseAdmits(&s, at, cnt, in.Cost) || in.Kind == Peek) {
				continue // refused (a lease may strand units), or a peek: nothing changes
			}
			n := s.clone()
			// With leases, leaseAdmits is Redis's rule (the counts less
			// what old leases spent, which Redis never held).
			charged := in.Kind != Peek && (sp.Lease > 0 || sp.admits(-1, cnt, in.Cost))
			sp.write(&n, -1, at, cnt, charged, in.Cost, in.Epoch)
			if charged && sp.lends() {
				sp.lend(&n, at, sp.Lease)
			}
			next = append(next, n)
		}
	}
	return next
}

// note records, for the over-limit cache of the deciding replica, what a
// decision at `at` left when some window is full: a request refused by
// it within a second (and before the full window ends) may be answered
// from it.
func (sp *Spec) note(n *state, in *Input, at int64, cnt []int64, charged bool) {
	n.marks = slices.DeleteFunc(n.marks, func(m mark) bool { return m.who == in.Replica && m.till+2*maxLocalAge <= at })
	var till int64
	full := false
	for i, w := range sp.Windows {
		c := cnt[i]
		if charged {
			c += in.Cost
		}
		if c >= sp.Limits[i] {
			end := (floorDiv(at, w) + 1) * w
			if !full || end > till {
				till = end
			}
			full = true
		}
	}
	if !full {
		return
	}
	till = min(till, in.At+sp.Stale)
	for i, w := range sp.Windows {
		c := cnt[i]
		if charged {
			c += in.Cost
		}
		n.marks = append(n.marks, mark{who: in.Replica, rate: i, id: floorDiv(at, w), n: c, till: till})
	}
}

// staleRefusal reports whether the replica's over-limit cache may refuse
// in: a count it noted, in the window of in's instant and before its
// mark ends, is over limit − cost.
func (sp *Spec) staleRefusal(s *state, in *Input) bool {
	for _, m := range s.marks {
		w := sp.Windows[m.rate]
		if m.who == in.Replica && m.id == floorDiv(in.At, w) && in.At < m.till &&
			(in.Cost > sp.Limits[m.rate] || m.n > sp.Limits[m.rate]-in.Cost) {
			return true
		}
	}
	return false
}

// leaseAdmits reports whether charged usage cnt at `at` leaves room for
// cost in every window, beside what was spent from leases granted before
// a Reset (not charged to the counts since).
func (sp *Spec) leaseAdmits(s *state, at int64, cnt []int64, cost int64) bool {
	for i, w := range sp.Windows {
		if cnt[i]-s.extraOf(i, floorDiv(at, w))+cost > sp.Limits[i] {
			return false
		}
	}
	return true
}

// extraOf returns what was spent in window id of rate i from leases
// granted before a Reset or a settle.
func (s *state) extraOf(i int, id int64) int64 { return windowOf(s.extra, i, id) }

// windowOf returns the count of rate i's window id in counts (the
// store's), or 0.
func windowOf(counts []count, i int, id int64) int64 {
	for _, c := range counts {
		if c.who < 0 && c.rate == i && c.id == id {
			return c.n
		}
	}
	return 0
}

// decideLeased steps a decision of a store with leases: an admission
// within the limit, or one the replica may make from a lease granted
// before another replica's Reset or settle; a refusal, and a peek, that
// see at least what was charged and no more than the leases since may
// explain (lends).
func (sp *Spec) decideLeased(s state, in Input, out Output) []state {
	if sp.ServerClock {
		in.At = out.At // Redis's window, as the store dated it
	}
	cnt := sp.windowCounts(&s, -1, in.At, 0)[0]
	if in.Kind == Peek || !out.Allowed {
		// A peek reads Redis, and so does a refusal but for one of the
		// over-limit cache's: what it holds is never less than what it
		// admitted (units leased unspent, or stranded, come on top).
		if in.Kind == Peek && out.Allowed && !sp.leaseAdmits(&s, in.At, cnt, in.Cost) {
			return nil
		}
		if in.Kind == Peek || sp.Stale == 0 {
			for i, w := range sp.Windows {
				seen := out.Used[i]
				if out.Allowed {
					seen -= in.Cost
				}
				id := floorDiv(in.At, w)
				if seen < cnt[i]-s.extraOf(i, id) {
					return nil // Redis holds less than it admitted
				}
				if seen > sp.Limits[i]+windowOf(s.debt, i, id) {
					return nil // leases and charges past the limit
				}
				if g := windowOf(s.lent, i, id); sp.lends() && g < sp.Limits[i] && seen > cnt[i]+g {
					return nil // more than the units leased since explain
				}
			}
		}
		return []state{s.clone()}
	}
	var next []state
	if sp.leaseAdmits(&s, in.At, cnt, in.Cost) {
		n := s.clone()
		sp.write(&n, -1, in.At, cnt, true, in.Cost, 0)
		if sp.lends() {
			sp.lend(&n, in.At, sp.Lease) // it may have come from Redis with a lease
		}
		next = append(next, n)
	}
	for k, c := range s.credits {
		if c.who != in.Replica || in.At >= c.till || c.n < in.Cost {
			continue
		}
		n := s.clone()
		sp.write(&n, -1, in.At, cnt, true, in.Cost, 0)
		n.credits[k].n -= in.Cost
		for i, w := range sp.Windows {
			id := floorDiv(in.At, w)
			x := n.extraOf(i, id) + in.Cost
			n.extra = slices.DeleteFunc(n.extra, func(e count) bool { return e.rate == i && e.id == id })
			n.extra = append(n.extra, count{who: -1, rate: i, id: id, n: x})
		}
		next = append(next, n)
	}
	return next
}

// lends reports whether the model bounds what Redis holds of a window
// beyond its count (state.lent): with leases, on the limiter's clock. What
// Redis holds past what it admitted since the key's latest Reset is what
// leases granted since hold unspent or stranded (each grant at most
// Lease units, carried by an admission that went to Redis), and what
// refunds and settles gave back to a lease rather than to Redis. A
// refusal, or a peek, that shows more was not made by Redis: a Reset
// that left a window's count, for one. (On Redis's clock a lease's
// decisions are dated by the replica's estimate of TIME; the bound is
// not kept there.)
func (sp *Spec) lends() bool { return sp.Lease > 0 && !sp.ServerClock }

// lend raises by units the bound of each window at instant at.
func (sp *Spec) lend(n *state, at, units int64) {
	for i, w := range sp.Windows {
		sp.lendTo(n, i, floorDiv(at, w), units)
	}
}

// lendTo raises by units the bound of rate i's window id, up to the
// limit: past it, the limit bounds what Redis holds.
func (sp *Spec) lendTo(n *state, i int, id, units int64) {
	g := min(windowOf(n.lent, i, id)+units, sp.Limits[i])
	n.lent = slices.DeleteFunc(n.lent, func(c count) bool { return c.rate == i && c.id == id })
	n.lent = append(n.lent, count{who: -1, rate: i, id: id, n: g})
}

// grantCredit gives every replica but the one that made the event (a
// Reset, a settle past the reservation) at `at` what it may still spend
// of a lease granted before: at most Lease units, for leaseGrace.
func (sp *Spec) grantCredit(n *state, replica int, at int64) {
	if sp.Lease == 0 {
		return
	}
	n.credits = n.credits[:0:0]
	for r := range sp.Replicas {
		if r != replica {
			n.credits = append(n.credits, credit{who: r, n: sp.Lease, till: at + leaseGrace})
		}
	}
}

// charge steps a settle that charges delta beyond its reservation to the
// windows current at the settle, whatever their count.
func (sp *Spec) charge(s state, in Input, delta int64) []state {
	w := -1
	if in.Local {
		w = in.Replica
	}
	var next []state
	for _, at := range sp.instants(&s, &in, w) {
		for _, cnt := range sp.windowCounts(&s, w, at, in.Epoch) {
			n := s.clone()
			sp.write(&n, w, at, cnt, true, delta, in.Epoch)
			if w < 0 && sp.Lease > 0 {
				sp.grantCredit(&n, in.Replica, in.At)
				for i, win := range sp.Windows {
					id := floorDiv(at, win)
					d := windowOf(n.debt, i, id) + delta
					n.debt = slices.DeleteFunc(n.debt, func(c count) bool { return c.rate == i && c.id == id })
					n.debt = append(n.debt, count{who: -1, rate: i, id: id, n: d})
				}
			}
			next = append(next, n)
		}
	}
	return next
}

// giveBack steps a refund, or a settle below its reservation: back goes
// to each window the admission (decided at in.Charged) charged that is
// still current, never below zero, unless the key was reset at or after
// in.Charged: the charge was counted in the budget the Reset ended, and
// its return gives nothing to the fresh one.
//
// With leases, part of it (j units) may go back instead to the lease of
// a replica that spent them from what it leased before a Reset or a
// settle (toLease), and the rest to Redis.
func (sp *Spec) giveBack(s state, in Input, back int64) []state {
	next := sp.giveBackToStore(s, in, back)
	for j := int64(1); j <= back && sp.Lease > 0 && !in.Local; j++ {
		if n, ok := sp.toLease(&s, &in, j); ok {
			next = append(next, sp.giveBackToStore(n, in, back-j)...)
		}
	}
	return next
}

// toLease returns s with j units of a return by in's replica given back
// to the lease it spent them from, granted before a Reset or a settle:
// redisstore's leases.refund takes back into the lease what it spent
// since its latest grant, in the windows of its span, and Redis sees
// nothing. Those units were
// counted as spent from the lease (extra) in the windows of the charge
// (decided at in.Charged): they leave the counts and extra, and the
// replica may spend them again until its credit ends; the credit never
// holds more than Lease, so what a replica spends of an old lease, net
// of returns, stays within it.
func (sp *Spec) toLease(s *state, in *Input, j int64) (state, bool) {
	k := slices.IndexFunc(s.credits, func(c credit) bool {
		return c.who == in.Replica && in.At < c.till && c.n+j <= sp.Lease
	})
	if k < 0 {
		return state{}, false
	}
	// The lease takes back only while its span holds the charge's
	// windows: the return is made in them, by the replica's clock (on
	// Redis's, its estimate of TIME, at most leaseEarly behind the call).
	lo, hi := in.At, in.At
	if sp.ServerClock {
		lo, hi = in.At-leaseEarly, max(in.AtHi, in.At)
	}
	for i, w := range sp.Windows {
		id := floorDiv(in.Charged, w)
		if s.extraOf(i, id) < j || id < floorDiv(lo, w) || id > floorDiv(hi, w) {
			return state{}, false
		}
	}
	n := s.clone()
	n.credits[k].n += j
	for i, w := range sp.Windows {
		id := floorDiv(in.Charged, w)
		x := n.extraOf(i, id) - j
		n.extra = slices.DeleteFunc(n.extra, func(e count) bool { return e.rate == i && e.id == id })
		if x > 0 {
			n.extra = append(n.extra, count{who: -1, rate: i, id: id, n: x})
		}
		if c, ok := n.find(-1, i, id); ok {
			n.set(-1, i, id, max(0, c.n-j), c.epoch, sp.single(-1))
		}
	}
	return n, true
}

// giveBackToStore steps the return of back units to Redis (or to the
// replica's fallback, or the memory store), as giveBack says.
func (sp *Spec) giveBackToStore(s state, in Input, back int64) []state {
	if back == 0 {
		return []state{s.clone()}
	}
	w := -1
	if in.Local {
		w = in.Replica
	}
	// A return is judged at the settle's instant (no table ahead moves
	// it); on Redis's clock, by TIME.
	at := []int64{in.At}
	if w < 0 && sp.ServerClock {
		at = sp.instants(&s, &in, w)
	}
	var next []state
	for _, since := range sp.resetSince(&s, w, in.Charged) {
		if since.wiped {
			next = append(next, since.s)
			continue
		}
		s := since.s
		for _, at := range at {
			for _, cnt := range sp.windowCounts(&s, w, in.Charged, in.Epoch) {
				n := s.clone()
				for i, win := range sp.Windows {
					id := floorDiv(in.Charged, win)
					if floorDiv(at, win) != id {
						continue // ended: a refund never lends to a later window
					}
					if _, ok := n.find(w, i, id); ok {
						n.set(w, i, id, max(0, cnt[i]-back), in.Epoch, sp.single(w))
						if w < 0 && sp.lends() {
							// It may have gone to a lease, Redis keeping it.
							sp.lendTo(&n, i, id, cnt[i]-max(0, cnt[i]-back))
						}
					}
				}
				if w < 0 && sp.ServerClock {
					n.time = max(n.time, at)
				}
				next = append(next, n)
			}
		}
	}
	return next
}

// A judged state is what a return of a charge finds: the key reset at or
// after the charge (wiped: the return gives nothing), or not.
type judged struct {
	s     state
	wiped bool
}

// resetSince returns whether who's latest Reset of the key came at or
// after charged: one answer on the limiter's clock; on Redis's, whose
// mark the model knows within [lo, hi], each answer the mark allows,
// with what that answer tells of the mark.
func (sp *Spec) resetSince(s *state, who int, charged int64) []judged {
	k := slices.IndexFunc(s.wipes, func(w wipe) bool { return w.who == who })
	if k < 0 {
		return []judged{{s: *s}}
	}
	m := s.wipes[k]
	switch {
	case charged <= m.lo:
		return []judged{{s: *s, wiped: true}}
	case charged > m.hi:
		return []judged{{s: *s}}
	}
	before, after := s.clone(), s.clone()
	before.wipes[k].lo = charged // the mark is at or after the charge
	after.wipes[k].hi = charged - 1
	return []judged{{s: before, wiped: true}, {s: after}}
}

// wipe marks who's key reset at an instant in [lo, hi]: a Reset's mark
// never moves back (another replica's clock behind leaves it), and on
// Redis's clock a later Reset's TIME is no earlier than an earlier one's.
func (n *state) wipe(who int, lo, hi int64) {
	k := slices.IndexFunc(n.wipes, func(w wipe) bool { return w.who == who })
	if k < 0 {
		n.wipes = append(n.wipes, wipe{who: who, lo: lo, hi: hi})
		return
	}
	m := &n.wipes[k]
	m.lo = max(m.lo, lo)
	m.hi = max(m.lo, hi)
}

// reset steps a Reset: the key's windows in the store go (every window
// of a store that keeps one per rate; on Redis on the limiter's clock
// those before, at and after the instant, for replicas whose clocks
// differ), and the replica's fallback's when it answered; each is marked
// reset at its instant; the replica's own cache forgets the key, and the
// other replicas may spend for a second what they leased before.
func (sp *Spec) reset(s state, in Input, out Output) []state {
	n := s.clone()
	local := !out.Unknown && sp.Divisor > 0
	gone := func(c count) bool {
		if c.who >= 0 {
			return c.who == in.Replica && local
		}
		if sp.single(-1) {
			return true
		}
		id := floorDiv(in.At, sp.Windows[c.rate])
		return c.id >= id-1 && c.id <= id+1
	}
	n.counts = slices.DeleteFunc(n.counts, gone)
	n.extra = slices.DeleteFunc(n.extra, gone)
	n.debt = slices.DeleteFunc(n.debt, gone)
	n.lent = slices.DeleteFunc(n.lent, gone)
	if !out.Unknown {
		n.marks = slices.DeleteFunc(n.marks, func(m mark) bool { return m.who == in.Replica })
	}
	if sp.ServerClock {
		lo, hi := max(in.At, s.time), max(in.AtHi, in.At)
		if lo > hi {
			return nil // Redis's clock is past every instant it could run at
		}
		n.wipe(-1, lo, hi)
		n.time = lo
	} else {
		n.wipe(-1, in.At, in.At)
	}
	if local {
		n.wipe(in.Replica, in.At, in.At)
	}
	sp.grantCredit(&n, in.Replica, in.At)
	return []state{n}
}

// acquire steps an Acquire: a slot when fewer than the cap are held, a
// refusal otherwise, each answering the slots held after it.
func (sp *Spec) acquire(s state, in Input, out Output) []state {
	w := who(&in, &out)
	if w >= 0 && sp.Divisor == 0 {
		return nil
	}
	heldBy := int64(0)
	for _, h := range s.slots {
		if h.who == w {
			heldBy++
		}
	}
	room := heldBy < sp.slots(w)
	take := func() state {
		n := s.clone()
		n.slots = append(n.slots, held{who: w, token: in.Token})
		return n
	}
	switch {
	case out.Unknown:
		if room {
			return []state{take()}
		}
		return nil // refused: nothing changes (step adds that)
	case len(out.Used) != 1 || out.Allowed != room:
		return nil
	case out.Allowed && out.Used[0] == heldBy+1:
		return []state{take()}
	case !out.Allowed && out.Used[0] == heldBy:
		return []state{s.clone()}
	}
	return nil
}
