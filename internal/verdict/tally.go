package verdict

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/rank"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A Tally is what a request's handler reports it cost, per unit, for a
// door's metered rules (Meter Reported) to settle at. It is the context
// the handler gets: it answers tallyKey itself, so the request's context
// grows by one node. Report adds to every tally of the request's context
// chain that counts the unit, so stacked doors each settle what was
// reported to them. Reports may come from any goroutine while the
// handler runs; the door reads them once it has returned.
type Tally struct {
	context.Context
	// units are the door's (Limits.Reported), by pointer, a word where
	// they take four, so that the HTTP door's metered state fits its
	// size class.
	units *Units
	// costs are the reported costs, per unit, plus one: 0 for a unit
	// nothing was reported in; closedBit set once the door has settled.
	// The bit lives in the word the reports add to, so that a report
	// and the settle that closes the tally are ordered by one
	// compare-and-swap: a report is counted if and only if it was taken.
	costs [MaxRules]atomic.Int64
	// held is the decision of the door's one Reported rule, charged at
	// reserved, when the door keeps no list of decisions (Limits.Every
	// false: X-RateLimit-* alone): the answer reads it at the cost
	// reported so far (DescribedWith), and it is not merged into the
	// request's Joined. The zero Decision (no Policy) when none is held.
	held     limiter.Decision
	reserved int64
	// flags: bit i, units[i] has a charge to settle (Arm); unserved, a
	// door inside answered the request itself (Unserved).
	flags atomic.Uint32
	unit  int8 // held's unit, its place in units.List
}

const (
	unservedFlag = 1 << MaxRules
	// closedBit marks a unit's cost closed: above every sum a report
	// may reach (limiter.MaxLimit + 1 < 2^50).
	closedBit = 1 << 62
)

// Arm marks the units of the charges l holds to settle: a unit whose
// limit failed open has none, and Report does not count in it.
func (t *Tally) Arm(l *Life) {
	var live uint32
	if !l.Charged.Owed {
		return
	}
	for i := range l.Charged.N {
		r := l.rule(l.Charged.Rule[i])
		if r.Meter != Reported {
			continue
		}
		for j, u := range t.units.List {
			if u == r.Unit {
				live |= 1 << j
			}
		}
	}
	t.flags.Or(live)
}

// Unserved marks every tally of ctx's request: a door inside the doors
// that made them answered the request itself (a refusal, an error, a
// client gone), so that no handler served it, and their metered limits
// settle at nothing.
func Unserved(ctx context.Context) {
	for t, _ := ctx.Value(tallyKey{}).(*Tally); t != nil; t, _ = t.Context.Value(tallyKey{}).(*Tally) {
		t.flags.Or(unservedFlag)
	}
}

// detached is a tally seen as its context without cancellation or
// deadline, as context.WithoutCancel makes, with no allocation: a settle
// runs after the request may be gone.
type detached Tally

func (d *detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (d *detached) Done() <-chan struct{}       { return nil }
func (d *detached) Err() error                  { return nil }
func (d *detached) Value(key any) any           { return (*Tally)(d).Value(key) }

// Detached returns the request's context (t's, its values included)
// without its cancellation or deadline, for the settles that follow the
// response.
func (t *Tally) Detached() context.Context { return (*detached)(t) }

// tallyKey is the context key of a *Tally.
type tallyKey struct{}

// Init makes t the tally of a request whose context was parent, for a
// door whose metered rules count in units (at most MaxRules), which it
// keeps and must not change.
func (t *Tally) Init(parent context.Context, units *Units) {
	t.Context, t.units = parent, units
}

// Value returns t for tallyKey, and asks the parent otherwise.
func (t *Tally) Value(key any) any {
	if _, ok := key.(tallyKey); ok {
		return t
	}
	return t.Context.Value(key)
}

// totals are a closed tally's costs, per unit of its units, as its
// reports left them: plus one, 0 for a unit nothing was reported in.
type totals [MaxRules]int64

// close takes no more reports and returns the costs reported: each
// unit's word is swapped to closed with what it held, so that a report
// either landed before (and is in the totals) or finds it closed (and
// is refused). Closing twice returns the same totals.
func (t *Tally) close() (tot totals) {
	for i := range t.units.List {
		for {
			old := t.costs[i].Load()
			if t.costs[i].CompareAndSwap(old, old|closedBit) {
				tot[i] = old &^ closedBit
				break
			}
		}
	}
	return tot
}

// Hold makes d, the decision of the door's one Reported rule, charged at
// reserved, in the unit at place unit of the door's Units.List, the
// tally's held decision (see DescribedWith).
func (t *Tally) Hold(d *limiter.Decision, reserved int64, unit int) {
	t.held, t.reserved, t.unit = *d, reserved, int8(unit)
}

// DescribedWith returns the decision the answer describes, as
// Described does, with the held decision of every tally of ctx's chain
// (the doors around whose one Reported rule is held) read at the cost
// reported so far: a handler that reports before it writes is described
// at that cost.
func (j *Joined) DescribedWith(ctx context.Context) limiter.Decision {
	best := j.best
	for t, _ := ctx.Value(tallyKey{}).(*Tally); t != nil; t, _ = t.Context.Value(tallyKey{}).(*Tally) {
		if t.held.Policy == nil {
			continue
		}
		d := t.held
		if v := t.costs[t.unit].Load() &^ closedBit; v > 0 {
			d = limiter.Settled(d, t.reserved, v-1)
		}
		if rank.More(&d, &best) {
			best = d
		}
	}
	return described(best)
}

// reported returns what has been reported in unit so far, and whether
// anything has: the tally need not be closed (the answer's first byte
// reads it while the handler runs).
func (t *Tally) reported(unit string) (int64, bool) {
	for i, u := range t.units.List {
		if u == unit {
			if v := t.costs[i].Load() &^ closedBit; v > 0 {
				return v - 1, true
			}
			break
		}
	}
	return 0, false
}

// cost returns the cost reported in unit, or reserved if none was.
func (t *Tally) cost(tot *totals, unit string, reserved int64) int64 {
	for i, u := range t.units.List {
		if u == unit {
			if v := tot[i]; v > 0 {
				return v - 1
			}
			break
		}
	}
	return reserved
}

// add adds cost to unit's; false when t does not count unit (or has no
// charge in it to settle, or has settled already) or the sum would pass
// limiter.MaxLimit (then nothing is added).
func (t *Tally) add(unit string, cost int64) bool {
	for i, u := range t.units.List {
		if u != unit || t.flags.Load()&(1<<i) == 0 {
			continue
		}
		for {
			old := t.costs[i].Load()
			if old&closedBit != 0 {
				return false
			}
			sum := cost
			if old > 0 {
				sum += old - 1
			}
			if sum > limiter.MaxLimit {
				return false
			}
			if t.costs[i].CompareAndSwap(old, sum+1) {
				return true
			}
		}
	}
	return false
}

// Units are the units a door's metered rules count in (WithReported),
// each once, and whom to tell of a report in none of them.
type Units struct {
	List []string
	// Misreported, when set, is told of a report (ctx is its context)
	// in a unit no door around the handler counts: a misspelt unit, a
	// limit the service forgot to add.
	Misreported func(ctx context.Context, unit string, cost int64)
}

// counts reports whether t's door counts unit.
func (t *Tally) counts(unit string) bool { return slices.Contains(t.units.List, unit) }

// Report adds cost to what the request of ctx has cost in unit, for each
// door around it with a charge to settle in that unit. It reports whether
// one took it: false for a cost below zero or above limiter.MaxLimit
// (or one that would take the request's total past it), for a context of
// no door metering unit, and once the doors have settled. A report in a
// unit that no door around counts, under one that meters some, is a
// misconfiguration: the innermost such door that has someone to tell
// (Units.Misreported) is told.
func Report(ctx context.Context, unit string, cost int64) bool {
	if cost < 0 || cost > limiter.MaxLimit || ctx == nil {
		return false
	}
	took, known := false, false
	var tell *Tally
	for t, _ := ctx.Value(tallyKey{}).(*Tally); t != nil; t, _ = t.Context.Value(tallyKey{}).(*Tally) {
		if t.add(unit, cost) {
			took = true
		}
		known = known || t.counts(unit)
		if tell == nil && t.units.Misreported != nil {
			tell = t
		}
	}
	if !known && tell != nil {
		tell.units.Misreported(ctx, unit, cost)
	}
	return took
}
