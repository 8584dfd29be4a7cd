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
// that applied, each once, in the order they applied. Set the first
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
// one allocation until it outgrows its room.
type policies struct {
	list []*limiter.Policy
	room [MaxPolicies]*limiter.Policy
}

// bestAlone marks a Joined that one policy applied to, its best
// decision's. It is only compared, never written.
var bestAlone = new(policies)

// Set makes d the decision the answer describes: the first one.
func (j *Joined) Set(d *limiter.Decision) { j.best = *d }

// Merge makes d the decision the answer describes if it is more
// restrictive than the one it describes now.
func (j *Joined) Merge(d *limiter.Decision) {
	if !rank.More(d, &j.best) {
		return
	}
	if j.more == bestAlone && d.Policy != j.best.Policy {
		j.list(j.best.Policy) // the policy alone so far, no longer best's
	}
	j.best = *d
}

// Best returns the most restrictive decision, as the limiter made it (a
// refusal stays a refusal).
func (j *Joined) Best() *limiter.Decision { return &j.best }

// Apply records that the policies applied, keeping each once. Every
// decision set or merged must be of a policy that applied.
func (j *Joined) Apply(ps []*limiter.Policy) {
	for _, p := range ps {
		switch {
		case (j.more == nil || j.more == bestAlone) && p == j.best.Policy:
			j.more = bestAlone
		case j.more == nil:
			j.list(p)
		case j.more == bestAlone:
			j.list(j.best.Policy, p)
		case !slices.Contains(j.more.list, p):
			j.more.list = append(j.more.list, p)
		}
	}
}

// list makes the list of the policies that applied: ps.
func (j *Joined) list(ps ...*limiter.Policy) {
	l := new(policies)
	l.list = append(l.room[:0], ps...)
	j.more = l
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
func (j *Joined) Described() limiter.Decision {
	d := j.best
	if !d.Allowed {
		d.Allowed, d.RetryAfter = true, 0
	}
	return d
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
