package verdict

import (
	"slices"

	"github.com/fixedwindow/ratelimit/internal/rank"
	"github.com/fixedwindow/ratelimit/limiter"
)

// MaxPolicies is the most policies a Joined lists without growing: two
// doors' worth of a middleware's limiters.
const MaxPolicies = 8

// A Joined is what the limits applied to one request decided, as its
// answer describes it: the most restrictive decision and every policy
// that applied, each once, in the order they applied, and, when a door
// describes every decision (draft fields, a set per unit, a metered
// limit: Limits.Every), each policy's decision (Keep). Set the first
// decision, then Merge the others: the zero Joined describes the zero
// Decision, a refusal, which no admission would replace. It is not safe
// for concurrent writes; the limits of one request write it in turn.
// It holds no flag of its own, so that the middleware's per-request
// state stays in its allocation size class.
type Joined struct {
	best limiter.Decision // the most restrictive decision; a refusal only in shadow mode
	// more is what applied: nil before any policy has; bestAlone while
	// one alone has, which is then best's (every decision set or
	// merged is of a policy that applied, and Merge lists the old one
	// before it replaces it with another's); otherwise the list of
	// them all. The common request allocates no list, and keeps one
	// word for it.
	more *policies
}

// policies is the list of a Joined that several policies applied to, in
// one allocation until it outgrows its room; and with kept, each one's
// decision, in a larger one (keptPolicies).
type policies struct {
	list []*limiter.Policy
	room [MaxPolicies]*limiter.Policy
	// kept[i] is the decision of list[i], when a door kept one (a zero
	// Entry otherwise; none past MaxPolicies); nil when no door keeps
	// every decision. A pointer, so that a list that keeps none stays in
	// its size class.
	kept *[MaxPolicies]Entry
}

// keptPolicies is a policies list with room for each one's decision.
type keptPolicies struct {
	policies
	room [MaxPolicies]Entry
}

// An Entry is one policy's decision as a door kept it for the answer,
// and, for a rule whose cost its handler reports (Meter Reported), what
// the answer needs to read it at the cost reported so far: the
// reservation it was charged at, the unit, and the tally the handler
// reports to.
type Entry struct {
	D        limiter.Decision
	Reserved int64
	Unit     string
	Tally    *Tally
}

// bestAlone marks a Joined that one policy applied to, its best
// decision's. It is only compared, never written.
var bestAlone = new(policies)

// Set makes d the decision the answer describes: the first one.
func (j *Joined) Set(d *limiter.Decision) { j.best = *d }

// Merge makes d the decision the answer describes if it is more
// restrictive than the one it describes now. keep: the door keeps every
// decision, so that the one d replaces is kept too.
func (j *Joined) Merge(d *limiter.Decision, keep bool) {
	if !rank.More(d, &j.best) {
		return
	}
	if j.more == bestAlone && d.Policy != j.best.Policy {
		j.list(keep, j.best.Policy) // the policy alone so far, no longer best's
		if keep {
			j.more.kept[0] = Entry{D: j.best}
		}
	}
	j.best = *d
}

// Best returns the most restrictive decision, as the limiter made it (a
// refusal stays a refusal).
func (j *Joined) Best() *limiter.Decision { return &j.best }

// Apply records that the policies applied, keeping each once. Every
// decision set or merged must be of a policy that applied. keep: the
// door keeps every decision (see Keep).
func (j *Joined) Apply(ps []*limiter.Policy, keep bool) {
	for _, p := range ps {
		switch {
		case (j.more == nil || j.more == bestAlone) && p == j.best.Policy:
			j.more = bestAlone
		case j.more == nil:
			j.list(keep, p)
		case j.more == bestAlone:
			j.list(keep, j.best.Policy, p)
			if keep {
				j.more.kept[0] = Entry{D: j.best}
			}
		case !slices.Contains(j.more.list, p):
			j.more.list = append(j.more.list, p)
		}
	}
}

// list makes the list of the policies that applied: ps; with room for
// their decisions when keep.
func (j *Joined) list(keep bool, ps ...*limiter.Policy) {
	var l *policies
	if keep {
		k := new(keptPolicies)
		l = &k.policies
		l.kept = &k.room
	} else {
		l = new(policies)
	}
	l.list = append(l.room[:0], ps...)
	j.more = l
}

// Keep records e as its policy's decision, for an answer that describes
// every decision (Limits.Every), after Apply has listed the policy. A
// request one policy alone applied to keeps nothing: the best decision
// is its.
func (j *Joined) Keep(e Entry) {
	if j.more == nil || j.more == bestAlone {
		return
	}
	l := j.more
	i := slices.Index(l.list, e.D.Policy)
	if i < 0 || i >= MaxPolicies {
		return
	}
	if l.kept == nil {
		// A door around kept none: room for every decision from now on.
		k := new(keptPolicies)
		k.policies.list = append(k.policies.room[:0], l.list...)
		k.policies.kept = &k.room
		j.more, l = &k.policies, &k.policies
	}
	l.kept[i] = e
}

// Applied returns every policy that applied, for the headers; nil when
// one alone did, which is then the policy of the best decision.
func (j *Joined) Applied() []*limiter.Policy {
	if j.more == nil || j.more == bestAlone {
		return nil
	}
	return j.more.list
}

// Described returns the decision as an admitted request's answer
// describes it: a refusal that shadow mode let through is an admission
// with nothing remaining and no retry delay.
func (j *Joined) Described() limiter.Decision { return described(j.best) }

// described is d as an admitted request's answer describes it.
func described(d limiter.Decision) limiter.Decision {
	if !d.Allowed {
		d.Allowed, d.RetryAfter, d.CostExceedsLimit = true, 0, false
	}
	return d
}

// Describe returns what the answer says, as the doors write it: the
// decision X-RateLimit-* describe (Described), and, when one policy
// alone applied or the doors kept every decision, each one, in the
// order the policies applied, in room
// (the caller's), and pointers to them, the first n of all: returned by
// value, so that both stay on the caller's stack. A kept decision of a Reported rule reads
// at the cost its handler has reported so far, if any (limiter.Settled):
// a handler that reports before it writes gets headers at the settled
// cost. The most restrictive is then found among them all.
func (j *Joined) Describe(room *[MaxPolicies]limiter.Decision) (best limiter.Decision, all [MaxPolicies]*limiter.Decision, n int) {
	switch {
	case j.more == bestAlone:
		// One policy applied: its decision is the best one.
		room[0] = j.Described()
		all[0] = &room[0]
		return room[0], all, 1
	case j.more == nil || j.more.kept == nil:
		return j.Described(), all, 0
	}
	// The best decision is found again among the kept ones, read as
	// they stand now; one of a policy no door kept (a door around that
	// keeps none) stays in the running as it was.
	best, found := j.best, true
	for i := range min(len(j.more.list), MaxPolicies) {
		e := &j.more.kept[i]
		if e.D.Policy == nil {
			continue
		}
		d := e.D
		if e.Tally != nil {
			if cost, ok := e.Tally.reported(e.Unit); ok {
				d = limiter.Settled(d, e.Reserved, cost)
			}
		}
		room[n] = d
		if d.Policy == j.best.Policy && found {
			best, found = d, false
		}
		n++
	}
	for i := range n {
		if rank.More(&room[i], &best) {
			best = room[i]
		}
		all[i] = &room[i]
	}
	return described(best), all, n
}

// With returns, in a new slice, the policies that applied to the request
// when ps are added to j's: the list a refusal's answer names. A nil j
// has none of its own. The copy keeps the caller's array on its stack:
// a denied handler is a func value that escape analysis cannot see
// through.
func (j *Joined) With(ps []*limiter.Policy) []*limiter.Policy {
	var all []*limiter.Policy
	switch {
	case j == nil || j.more == nil:
	case j.more == bestAlone:
		all = append(all, j.best.Policy)
	default:
		all = append(all, j.more.list...)
	}
	for _, p := range ps {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	return all
}
