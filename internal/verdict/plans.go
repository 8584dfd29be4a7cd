package verdict

import (
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"
	"sync/atomic"

	"github.com/fixedwindow/ratelimit/internal/cache"
	"github.com/fixedwindow/ratelimit/limiter"
)

// DefaultKept is how many resolutions a door keeps unless it is given a
// Kept of its own: a lookup that makes a Plan per request must not grow
// them without end. Past it each new resolution evicts one not used
// lately (internal/cache).
const DefaultKept = 1 << 16

// Kept are the resolutions of plans and zones one or more doors keep, at
// most a bound in all. A resolution is derived data (limiters, which
// hold no count): evicting one costs its next request a resolution,
// nothing else.
type Kept struct {
	m *cache.Map[planKey, *Resolved]
}

// NewKept returns a Kept of at most n resolutions (n ≥ 8, rounded down
// to a multiple of eight).
func NewKept(n int) *Kept {
	seed := maphash.MakeSeed()
	return &Kept{m: cache.New[planKey, *Resolved](n, func(k planKey) uint64 {
		h := maphash.String(seed, k.zone)
		h = cache.Mix(h, k.door)
		for i := range k.limits {
			for _, x := range k.limits[i] {
				h = cache.Mix(h, uint64(x))
			}
		}
		for _, x := range k.caps {
			h = cache.Mix(h, uint64(x))
		}
		return h
	})}
}

// PlanCacheKept returns the Kept of a *middleware.PlanCache. Package
// middleware, which this package cannot import, sets it, so that the
// gRPC door (grpclimit.WithPlanCache) shares a PlanCache's resolutions
// without the type showing what it holds.
var PlanCacheKept func(planCache any) *Kept

// Stats returns how many resolutions k keeps, and how many lookups
// found theirs and did not.
func (k *Kept) Stats() cache.Stats { return k.m.Stats() }

// Bound returns how many resolutions k keeps at most.
func (k *Kept) Bound() int { return k.m.Bound() }

// doors numbers the Plans sharing a Kept.
var doors atomic.Uint64

// Plans resolve a door's limits per request: every rate and cap of the
// door under a plan's limits, with calendar rates in a zone. A door
// builds one (NewPlans) when its every request is resolved; it is safe
// for concurrent use, and a resolution is looked up without a lock.
type Plans struct {
	rules []Rule
	caps  []*limiter.InFlight
	names []string // the rules' policies' names, then the caps'
	rates []int    // each rule's policy's number of rates
	door  uint64
	kept  *Kept
	// recent finds the resolution of a plan by its address and zone
	// before kept is asked by contents: a plan is never written once in
	// use (limiter.Plan), so its address stands for its contents.
	recent *cache.Recent[limiter.Plan, Resolved]
}

// recentSlots is how many plans and zones a door finds by address: the
// pairs a service's own plans (kept, not made per request) are used in,
// most often; 24 KiB.
const recentSlots = 1 << 10

// A planKey names a resolution by what it is made of, not by the
// plan's address, so that a plan equal to another finds its resolution
// and a plan of other limits finds its own: the door, the limits the
// plan gives each rule (zeros where it gives none: the policy's own),
// the maximum it gives each cap (0: the cap's own), and the zone.
type planKey struct {
	door   uint64
	zone   string
	limits [MaxRules][limiter.MaxWindows]int64
	caps   [MaxCaps]int64
}

// Resolved are the rates and caps that apply to a request of one plan
// and zone, in the door's order.
type Resolved struct {
	Rules []Rule
	Caps  []*limiter.InFlight
	zone  string // the zone it was resolved in, checked by recent
}

// NewPlans returns the Plans of a door's rules and caps, as the door
// built them, keeping its resolutions in kept (nil: a Kept of its own,
// of DefaultKept); every rule's limiter must be a *limiter.Limiter,
// which alone derives a plan's limits (limiter.Limiter.For). option
// names the door's option in the error.
func NewPlans(option string, rules []Rule, caps []*limiter.InFlight, kept *Kept) (*Plans, error) {
	p := &Plans{rules: rules, caps: caps, kept: kept, door: doors.Add(1),
		recent: cache.NewRecent[limiter.Plan, Resolved](recentSlots)}
	for i, r := range rules {
		if _, ok := r.Lim.(*limiter.Limiter); !ok {
			return nil, fmt.Errorf("%s: limiter %d (policy %q) is a %T: a plan's limits apply to a *limiter.Limiter", option, i, r.Lim.Policy().Name(), r.Lim)
		}
		p.names = append(p.names, r.Lim.Policy().Name())
		p.rates = append(p.rates, r.Lim.Policy().NumRates())
	}
	for _, f := range caps {
		p.names = append(p.names, f.Policy().Name())
	}
	if p.kept == nil {
		p.kept = NewKept(DefaultKept)
	}
	return p, nil
}

// key returns the key of plan's resolution in zone; false for a plan
// whose resolution is not kept: nil, or with limits or a maximum that
// cannot apply (limiter.Limiter.For and limiter.InFlight.For say why).
func (p *Plans) key(plan *limiter.Plan, zone string) (planKey, bool) {
	k := planKey{door: p.door, zone: zone}
	if plan == nil {
		return k, false
	}
	for i, n := range p.rates {
		ls := plan.Limits[p.names[i]]
		if ls == nil {
			continue
		}
		if len(ls) != n {
			return k, false
		}
		for j, x := range ls {
			if x <= 0 {
				return k, false
			}
			k.limits[i][j] = x
		}
	}
	for i := range p.caps {
		if m, ok := plan.Caps[p.names[len(p.rates)+i]]; ok {
			if m <= 0 {
				return k, false
			}
			k.caps[i] = m
		}
	}
	return k, true
}

// ErrNoPlan is the error of a lookup that found no plan (nil) and no
// error: the server's mistake, a customer of a plan nobody declared.
var ErrNoPlan = errors.New("the lookup returned no plan and no error")

// Resolve returns the rates and caps of plan in zone. An error is the
// server's mistake, and names the plan and the zone: no plan, a plan
// whose limits do not fit a policy, a zone the tz database does not have
// (limiter.ErrInvalidPolicy), or a limiter closed (limiter.ErrClosed).
func (p *Plans) Resolve(plan *limiter.Plan, zone string) (*Resolved, error) {
	if r := p.recent.Get(plan, zone); r != nil && r.zone == zone {
		p.kept.m.Hit()
		return r, nil
	}
	k, keep := p.key(plan, zone)
	if keep {
		if r, ok := p.kept.m.Get(k); ok {
			p.recent.Put(plan, zone, r)
			return r, nil
		}
	}
	r, err := p.resolve(plan, zone)
	if err != nil {
		name := "<nil>"
		if plan != nil {
			name = strconv.Quote(plan.Name)
		}
		return nil, fmt.Errorf("plan %s, zone %q: %w", name, zone, err)
	}
	if !keep {
		return r, nil
	}
	r = p.kept.m.Add(k, r)
	p.recent.Put(plan, zone, r)
	return r, nil
}

// resolve is Resolve of a plan and zone not kept.
func (p *Plans) resolve(plan *limiter.Plan, zone string) (*Resolved, error) {
	if plan == nil {
		return nil, ErrNoPlan
	}
	r := &Resolved{Rules: make([]Rule, len(p.rules)), Caps: make([]*limiter.InFlight, len(p.caps)), zone: zone}
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
