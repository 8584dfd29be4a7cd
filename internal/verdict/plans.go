package verdict

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/fixedwindow/ratelimit/internal/cow"
	"github.com/fixedwindow/ratelimit/limiter"
)

// maxResolved bounds the plans and zones a door keeps resolved: a lookup
// that makes a Plan per request must not grow the cache without end.
// Past it the cache starts afresh (internal/cow): the plans in use are
// resolved again, one request each, and those no longer used (a
// configuration reloaded into new Plan values) go.
const maxResolved = 4096

// Plans resolve a door's limits per request: every rate and cap of the
// door under a plan's limits, with calendar rates in a zone. A door
// builds one (NewPlans) when its every request is resolved; it is safe
// for concurrent use, and a resolution is looked up without a lock.
type Plans struct {
	rules []Rule
	caps  []*limiter.InFlight
	kept  cow.Map[planKey, *Resolved]
}

// A planKey names a resolution: a plan, by its address (a Plan does not
// change once used), and a zone.
type planKey struct {
	plan *limiter.Plan
	zone string
}

// Resolved are the rates and caps that apply to a request of one plan
// and zone, in the door's order.
type Resolved struct {
	Rules []Rule
	Caps  []*limiter.InFlight
}

// NewPlans returns the Plans of a door's rules and caps, as the door
// built them; every rule's limiter must be a *limiter.Limiter, which
// alone derives a plan's limits (limiter.Limiter.For). option names
// the door's option in the error.
func NewPlans(option string, rules []Rule, caps []*limiter.InFlight) (*Plans, error) {
	for i, r := range rules {
		if _, ok := r.Lim.(*limiter.Limiter); !ok {
			return nil, fmt.Errorf("%s: limiter %d (policy %q) is a %T: a plan's limits apply to a *limiter.Limiter", option, i, r.Lim.Policy().Name(), r.Lim)
		}
	}
	p := &Plans{rules: rules, caps: caps}
	p.kept.SetBound(maxResolved)
	return p, nil
}

// ErrNoPlan is the error of a lookup that found no plan (nil) and no
// error: the server's mistake, a customer of a plan nobody declared.
var ErrNoPlan = errors.New("the lookup returned no plan and no error")

// Resolve returns the rates and caps of plan in zone. An error is the
// server's mistake, and names the plan and the zone: no plan, a plan
// whose limits do not fit a policy, a zone the tz database does not have
// (limiter.ErrInvalidPolicy), or a limiter closed (limiter.ErrClosed).
func (p *Plans) Resolve(plan *limiter.Plan, zone string) (*Resolved, error) {
	k := planKey{plan, zone}
	if r, ok := p.kept.Get(k); ok {
		return r, nil
	}
	r, err := p.resolve(plan, zone)
	if err != nil {
		name := "<nil>"
		if plan != nil {
			name = strconv.Quote(plan.Name)
		}
		return nil, fmt.Errorf("plan %s, zone %q: %w", name, zone, err)
	}
	return p.kept.Add(k, r), nil
}

// resolve is Resolve of a plan and zone not kept.
func (p *Plans) resolve(plan *limiter.Plan, zone string) (*Resolved, error) {
	if plan == nil {
		return nil, ErrNoPlan
	}
	r := &Resolved{Rules: make([]Rule, len(p.rules)), Caps: make([]*limiter.InFlight, len(p.caps))}
	for i, rule := range p.rules {
		l, err := rule.Lim.(*limiter.Limiter).For(plan, zone)
		if err != nil {
			return nil, err
		}
		r.Rules[i] = NewRule(l)
		r.Rules[i].Meter, r.Rules[i].Unit = rule.Meter, rule.Unit
		if rule.Meter != Fixed {
			r.Rules[i].Settler = l
		}
	}
	for i, f := range p.caps {
		g, err := f.For(plan)
		if err != nil {
			return nil, err
		}
		r.Caps[i] = g
	}
	return r, nil
}

// Failing returns the limits of a request whose plan could not be
// looked up, err saying why: each rate stands in for the door's, under
// its policy, and fails with err, so that the request takes the failure
// policy as for a store that failed; the caps are the door's. A door of
// caps alone gets one failing rate under its first cap's policy, keyed
// (keys[0]) by capKey, the first cap's key.
func (p *Plans) Failing(err error, keys *[MaxRules]string, capKey string) *Resolved {
	r := &Resolved{Rules: make([]Rule, max(len(p.rules), 1)), Caps: p.caps}
	if len(p.rules) == 0 {
		keys[0] = capKey
		r.Rules[0] = Rule{Lim: &Unavailable{Err: err, policy: p.caps[0].Policy()}}
		return r
	}
	for i, rule := range p.rules {
		r.Rules[i] = Rule{Lim: &Unavailable{Err: err, policy: rule.Lim.Policy()}}
	}
	return r
}

// Policy returns the policy a door's plan failures are reported under:
// its first rate's, or for a door of caps alone its first cap's.
func (p *Plans) Policy() *limiter.Policy {
	if len(p.rules) > 0 {
		return p.rules[0].Lim.Policy()
	}
	return p.caps[0].Policy()
}
