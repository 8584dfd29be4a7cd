package metrics

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// policyMetrics holds one policy's series, resolved once: looking a series
// up by its label values hashes them, which cost more than the rest of
// Observe together.
type policyMetrics struct {
	name     string
	outcomes []prometheus.Counter // by Outcome, from Allowed on
	duration prometheus.Observer
	inFlight prometheus.Gauge // an in-flight cap's; nil for a policy of rates
}

// maxCachedPolicies bounds the cache, of policy names: a door's names
// are fixed at startup (the limiters a plan derives, one per plan and
// zone, share their policy's name); past the bound, series are looked up
// on every event instead, which is slower but correct.
const maxCachedPolicies = 256

// maxOutcome bounds the outcomes given series per policy: every outcome
// middleware names, probed by its String, so that one added there is
// counted at zero here without a change.
const maxOutcome middleware.Outcome = 32

// policyCache maps a policy's name (and whether it is a cap's) to its
// *policyMetrics: the series are by name, so the policies of one name,
// such as those limiter.Limiter.For derives for every plan and zone,
// share one entry.
type policyCache struct {
	m sync.Map
	n atomic.Int64
}

// A cacheKey names a policy's series.
type cacheKey struct {
	name     string
	inFlight bool
}

func (c *policyCache) get(m *Metrics, p *limiter.Policy) *policyMetrics {
	k := cacheKey{inFlight: p.MaxInFlight() > 0}
	if p != nil {
		k.name = p.Name()
	}
	if v, ok := c.m.Load(k); ok {
		return v.(*policyMetrics)
	}
	pm := newPolicyMetrics(m, p)
	if c.n.Load() >= maxCachedPolicies {
		return pm
	}
	if v, loaded := c.m.LoadOrStore(k, pm); loaded {
		return v.(*policyMetrics)
	}
	c.n.Add(1)
	return pm
}

// newPolicyMetrics creates p's series, every outcome at zero, so that
// rates over them are defined from the first event on.
func newPolicyMetrics(m *Metrics, p *limiter.Policy) *policyMetrics {
	pm := &policyMetrics{name: "unknown"}
	if p != nil {
		pm.name = p.Name()
	}
	pm.outcomes = make([]prometheus.Counter, middleware.Allowed, middleware.Allowed+8)
	for o := middleware.Allowed; o.String() != "unknown" && o < maxOutcome; o++ {
		pm.outcomes = append(pm.outcomes, m.decisions.WithLabelValues(pm.name, o.String()))
	}
	pm.duration = m.duration.WithLabelValues(pm.name)
	if p.MaxInFlight() > 0 {
		pm.inFlight = m.inFlight.WithLabelValues(pm.name)
	}
	return pm
}
