package limiter

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"time"

	"github.com/fixedwindow/ratelimit/internal/cache"
	"github.com/fixedwindow/ratelimit/internal/calendar"
)

// A Plan is what one kind of customer may use: a limit per rate of each
// policy it names, and a maximum per in-flight cap it names. Declare
// each plan once, as a value, and look a customer's plan up per request
// (middleware.WithPlans and grpclimit's do it for every limit and cap of
// a door at once); Limiter.For and InFlight.For apply one to a limiter
// or a cap.
//
// A plan changes limits, never usage: counters belong to the key, under
// a policy's name and windows (see Policy), so a customer moved from one
// plan to another within a month keeps what they used of every unit. A
// policy or a cap the plan does not name keeps its own limits: declare
// the common ones in the policies and the differences in the plans.
//
//	free := &limiter.Plan{Name: "free",
//		Limits: map[string][]int64{"api": {1_000, 10}, "tokens": {50_000}}, // api: a month, a minute
//		Caps:   map[string]int64{"exports": 2}}
//
// A plan is its contents, not its address: limiters derived from it are
// kept by its limits (and zone), so a fresh *Plan per request that
// equals an earlier one finds what that one derived, and a plan of other
// limits takes effect at the request it is given for. A Plan is read
// while requests run: change a customer's limits by handing out a new
// *Plan, never by writing one in use (its maps would be read and written
// at once, and a plan used often is found by its address, its limits
// unread). The zero Plan names no limit.
type Plan struct {
	// Name names the plan in errors, and for the doors' lookups.
	Name string
	// Limits are the plan's limits by policy name: one per rate of the
	// policy, in its order, each as NewPolicy checks it.
	Limits map[string][]int64
	// Caps are the plan's in-flight maxima by cap name (NewInFlight's):
	// 1 to MaxLimit.
	Caps map[string]int64
}

// defaultResolutions is how many resolutions For keeps per limiter or
// cap unless WithResolutions says otherwise.
const defaultResolutions = 1 << 16

// WithResolutions sets how many of For's resolutions (a plan's limits
// in a zone: a derived limiter, or a cap) New's limiter or NewInFlight's
// cap keeps, at least 8 (default 65,536, rounded down to a multiple of
// eight). Past it each new resolution evicts one not used lately (see
// docs/performance.md): a lookup that makes plans faster than they can
// be kept costs a resolution per request, never a count, since
// counters live in the store.
func WithResolutions(n int) Option {
	return func(c *config) { c.resolutions, c.resolutionsSet = n, true }
}

// A variant names a limiter For derived: its limits (one per rate, in
// order) and the zone its calendar rates count in ("" for the policy's
// own).
type variant struct {
	limits [MaxWindows]int64
	zone   string
}

// For returns the limiter that decides the usage of l's policy under
// plan's limits for it (plan.Limits[name], one per rate; the policy's own
// when plan is nil or names none), with every calendar rate of the
// policy counted in zone (a name of the tz database, "Asia/Kolkata",
// checked and loaded once; "" keeps the policy's own zones). It shares
// l's store, clock, claim and life; For on a limiter For returned
// derives from the policy New was given.
//
// One limiter decides customers in any zone: each is counted in the
// windows of their own zone (a month from their own midnight on the 1st,
// its X-RateLimit-Reset at that midnight), under counters named by the
// policy's name, its windows and that zone (see Policy.ID). A customer
// whose zone changes is counted in the new zone's windows from then on:
// windows of fixed length (a minute) keep their counts, being the same
// windows whatever the zone, while the calendar windows of the new zone
// start from what was counted in them (nothing, for a zone never used),
// and those of the old zone keep theirs, found again should the customer
// move back within them. So a zone that a customer may change freely
// lends one period's budget per zone: apply such a change at the next
// period's start (docs/algorithm.md shows how).
//
// A policy with calendar rates of one period in two zones (a day in
// Paris and a day in UTC) cannot be counted in one zone: For with a zone
// is then an error. The limiters For derives share l's claim on its
// store (see New), under the policy's own ID: derive every zone from one
// limiter, rather than New a limiter of the policy in a zone, which would
// count the same windows as the derived one unchecked.
//
// Limiters are kept per limits and zone, at most 65,536 of them unless
// WithResolutions says otherwise (past that each new one evicts one not
// used lately), and looked up without a lock: call For per request. A
// plan used often is found by its address first (a Plan in use is never
// written), among 1,024 plans and zones, without reading its limits.
// Errors wrap
// ErrInvalidPolicy: limits of another count than the policy's rates, or
// out of a rate's range; a zone the tz database does not have, or that
// names no zone ("Local", a path); and ErrClosed.
func (l *Limiter) For(plan *Plan, zone string) (*Limiter, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	if plan == nil {
		return l.derive(nil, zone)
	}
	// A plan is never written once in use (Plan), so its address stands
	// for its limits: found by it, a plan's limiter costs no map lookup
	// of its limits and no hash of them.
	recent := l.recentPlans()
	if v := recent.Get(plan, zone); v != nil && v.zone == zone {
		return v, nil // For's counts are nobody's to read: no hit counted
	}
	v, err := l.derive(plan, zone)
	if err == nil {
		recent.Put(plan, zone, v)
	}
	return v, err
}

// recentSlots is how many plans and zones For finds by the plan's
// address (cache.Recent): those a service's own plans are used in, most
// often; 24 KiB, allocated on For's first plan.
const recentSlots = 1 << 10

// recentPlans returns the limiter's Recent, making it on first use.
func (l *Limiter) recentPlans() *cache.Recent[Plan, Limiter] {
	if r := l.recent.Load(); r != nil {
		return r
	}
	l.recent.CompareAndSwap(nil, cache.NewRecent[Plan, Limiter](recentSlots))
	return l.recent.Load()
}

// derive is For of a plan not found by its address.
func (l *Limiter) derive(plan *Plan, zone string) (*Limiter, error) {
	root := l.root
	var limits []int64
	if plan != nil {
		limits = plan.Limits[root.policy.name]
	}
	if limits == nil && zone == "" {
		return root, nil
	}
	var k variant
	if limits != nil {
		if len(limits) != len(root.policy.rates) {
			return nil, fmt.Errorf("%w: plan %q: policy %q has %d rates, given %d limits", ErrInvalidPolicy, plan.Name, root.policy.name, len(root.policy.rates), len(limits))
		}
		copy(k.limits[:], limits)
	} else {
		for i, r := range root.policy.rates {
			k.limits[i] = r.Limit
		}
	}
	k.zone = zone
	if v, ok := l.variants.Get(k); ok {
		return v, nil
	}
	if zone == "" && sameLimits(root.policy, k.limits) {
		return root, nil
	}
	var loc *time.Location
	if zone != "" {
		var err error
		if loc, err = calendar.Zone(zone); err != nil {
			return nil, fmt.Errorf("%w: policy %q: %v", ErrInvalidPolicy, root.policy.name, err)
		}
	}
	q, err := root.policy.derive(k.limits[:len(root.policy.rates)], loc)
	if err != nil {
		if plan != nil {
			err = fmt.Errorf("plan %q: %w", plan.Name, err)
		}
		return nil, err
	}
	return l.variants.Add(k, &Limiter{policy: q, zone: zone, shared: l.shared}), nil
}

// sameLimits reports whether limits are p's own, rate by rate.
func sameLimits(p *Policy, limits [MaxWindows]int64) bool {
	for i, r := range p.rates {
		if limits[i] != r.Limit {
			return false
		}
	}
	return true
}

// derive returns a policy of p's name, windows and unit under limits,
// one per rate, with every calendar rate counted in loc (nil: its own
// zone), checked as NewPolicy checks its rates.
func (p *Policy) derive(limits []int64, loc *time.Location) (*Policy, error) {
	rates := append([]Rate(nil), p.rates...)
	for i := range rates {
		rates[i].Limit = limits[i]
		if loc != nil && rates[i].period != 0 {
			rates[i].loc = loc
		}
	}
	q, err := NewPolicy(p.name, rates...)
	if err != nil {
		return nil, err
	}
	q.unit = p.unit
	return q, nil
}

// For returns the cap of f's name and slots under plan's maximum for it
// (plan.Caps[name]; f's own when plan is nil or names none): one cap of
// slots, whatever the plan, so that a customer moved to another plan
// keeps the slots they hold. It shares f's store, clock, lease and life,
// and is kept per maximum, looked up without a lock: call For per
// request. Errors wrap ErrInvalidPolicy (a maximum out of [1,
// MaxLimit]), or are ErrClosed.
func (f *InFlight) For(plan *Plan) (*InFlight, error) {
	root := f.root()
	if root.closed.Load() {
		return nil, ErrClosed
	}
	if plan == nil {
		return root, nil
	}
	m, ok := plan.Caps[root.policy.name]
	if !ok || m == root.policy.inFlight {
		return root, nil
	}
	if v, ok := root.variants.Get(m); ok {
		return v, nil
	}
	if m <= 0 || m > MaxLimit {
		return nil, fmt.Errorf("%w: plan %q: in-flight cap %q: max %d must be in [1, %d]", ErrInvalidPolicy, plan.Name, root.policy.name, m, MaxLimit)
	}
	p := root.policy
	v := &InFlight{policy: &Policy{name: p.name, id: p.id, tag: p.tag, uid: p.uid, inFlight: m},
		store: root.store, clock: root.clock, lease: root.lease, base: root}
	return root.variants.Add(m, v), nil
}

// newVariants returns the cache of For's limiters of a limiter New
// made, of at most n.
func newVariants(n int) *cache.Map[variant, *Limiter] {
	seed := maphash.MakeSeed()
	return cache.New[variant, *Limiter](n, func(k variant) uint64 {
		h := maphash.String(seed, k.zone)
		for _, x := range k.limits {
			h = cache.Mix(h, uint64(x))
		}
		return h
	})
}

// newCapVariants returns the cache of For's caps of a cap NewInFlight
// made, of at most n.
func newCapVariants(n int) *cache.Map[int64, *InFlight] {
	seed := rand.Uint64()
	return cache.New[int64, *InFlight](n, func(m int64) uint64 { return cache.Mix(seed, uint64(m)) })
}
