package otelmetrics

import (
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// outcomeMetrics is one policy's attributes for one outcome, built once:
// building an attribute.Set sorts and hashes it, which would cost more
// than the rest of Observe together.
type outcomeMetrics struct {
	attr attribute.KeyValue // ratelimit.outcome
	add  []metric.AddOption // ratelimit.policy and ratelimit.outcome
}

// policyMetrics holds one policy's precomputed attributes.
type policyMetrics struct {
	name     string
	attr     attribute.KeyValue    // ratelimit.policy
	outcomes []outcomeMetrics      // by Outcome, from Allowed on
	duration []metric.RecordOption // ratelimit.policy
	inFlight []metric.AddOption    // ratelimit.policy, for an in-flight cap; nil for a policy of rates
	errors   sync.Map              // reason → []metric.AddOption
	nErrors  atomic.Int64
}

// Bounds of the caches. Policy names are fixed at startup (the limiters a
// plan derives, one per plan and zone, share their policy's name) and
// reasons come from a small set; past a bound (a reason function
// returning error text), attributes are built on every event instead,
// which is slower but correct.
const (
	maxCachedPolicies = 256
	maxCachedReasons  = 32
)

// maxOutcome bounds the outcomes cached per policy: every outcome
// middleware names, probed by its String, so that one added there is
// cached here without a change.
const maxOutcome middleware.Outcome = 32

func newPolicyMetrics(p *limiter.Policy) *policyMetrics {
	pm := &policyMetrics{name: "unknown"}
	if p != nil {
		pm.name = p.Name()
	}
	pm.attr = policyKey.String(pm.name)
	pm.outcomes = make([]outcomeMetrics, middleware.Allowed, middleware.Allowed+8)
	for o := middleware.Allowed; o.String() != "unknown" && o < maxOutcome; o++ {
		pm.outcomes = append(pm.outcomes, pm.newOutcome(o))
	}
	set := attribute.NewSet(pm.attr)
	pm.duration = []metric.RecordOption{metric.WithAttributeSet(set)}
	if p.MaxInFlight() > 0 {
		pm.inFlight = []metric.AddOption{metric.WithAttributeSet(set)}
	}
	return pm
}

func (pm *policyMetrics) newOutcome(o middleware.Outcome) outcomeMetrics {
	attr := outcomeKey.String(o.String())
	return outcomeMetrics{attr: attr, add: []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pm.attr, attr))}}
}

// outcome returns o's attributes; an outcome this package does not know
// (the zero Outcome, one added later) is counted under its String.
func (pm *policyMetrics) outcome(o middleware.Outcome) *outcomeMetrics {
	if o >= middleware.Allowed && int(o) < len(pm.outcomes) {
		return &pm.outcomes[o]
	}
	om := pm.newOutcome(o)
	return &om
}

// errorOptions returns the attributes of a store error of this policy.
func (pm *policyMetrics) errorOptions(why string) []metric.AddOption {
	if v, ok := pm.errors.Load(why); ok {
		return v.([]metric.AddOption)
	}
	opts := []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(pm.attr, reasonKey.String(why)))}
	if pm.nErrors.Load() >= maxCachedReasons {
		return opts
	}
	if v, loaded := pm.errors.LoadOrStore(why, opts); loaded {
		return v.([]metric.AddOption)
	}
	pm.nErrors.Add(1)
	return opts
}

// policyCache maps a policy's name (and whether it is a cap's) to its
// *policyMetrics: attributes, and so series, are by name, so the policies
// of one name, such as those limiter.Limiter.For derives for every plan
// and zone, share one entry.
type policyCache struct {
	m sync.Map
	n atomic.Int64
}

// A cacheKey names a policy's series.
type cacheKey struct {
	name     string
	inFlight bool
}

func (c *policyCache) get(p *limiter.Policy) *policyMetrics {
	k := cacheKey{inFlight: p.MaxInFlight() > 0}
	if p != nil {
		k.name = p.Name()
	}
	if v, ok := c.m.Load(k); ok {
		return v.(*policyMetrics)
	}
	pm := newPolicyMetrics(p)
	if c.n.Load() >= maxCachedPolicies {
		return pm
	}
	if v, loaded := c.m.LoadOrStore(k, pm); loaded {
		return v.(*policyMetrics)
	}
	c.n.Add(1)
	return pm
}
