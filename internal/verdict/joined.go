package verdict

import (
	"slices"

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

	// one is the policy that applied while it is the only one; policies
	// lists every policy that applied once there are several. The
	// common request allocates no list.
	one      *limiter.Policy
	policies []*limiter.Policy
}

// Set makes d the decision the answer describes: the first one.
func (j *Joined) Set(d *limiter.Decision) { j.best = *d }

// Merge makes d the decision the answer describes if it is more
// restrictive than the one it describes now.
func (j *Joined) Merge(d *limiter.Decision) {
	if More(d, &j.best) {
		j.best = *d
	}
}

// Best returns the most restrictive decision, as the limiter made it (a
// refusal stays a refusal).
func (j *Joined) Best() *limiter.Decision { return &j.best }

// Apply records that the policies applied, keeping each once.
func (j *Joined) Apply(ps []*limiter.Policy) {
	for _, p := range ps {
		switch {
		case j.policies == nil && (j.one == nil || j.one == p):
			j.one = p
		case j.policies == nil:
			j.policies = append(make([]*limiter.Policy, 0, MaxPolicies), j.one, p)
		case !slices.Contains(j.policies, p):
			j.policies = append(j.policies, p)
		}
	}
}

// Applied returns every policy that applied, for the headers; nil when
// one alone did, which is then the policy of the best decision.
func (j *Joined) Applied() []*limiter.Policy { return j.policies }

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
	case j != nil && j.policies != nil:
		all = append(all, j.policies...)
	case j != nil && j.one != nil:
		all = append(all, j.one)
	}
	for _, p := range ps {
		if !slices.Contains(all, p) {
			all = append(all, p)
		}
	}
	return all
}
