package otelmetrics

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/fixedwindow/ratelimit/middleware"
)

// planCacheKey names a plan cache given to ObservePlanCache.
const planCacheKey = attribute.Key("ratelimit.plan.cache")

// planInstruments report the counts of the plan caches given to
// ObservePlanCache, read at each collection: nothing on the request
// path.
type planInstruments struct {
	kept         metric.Int64ObservableGauge
	hits, misses metric.Int64ObservableCounter
	mu           sync.Mutex
	caches       map[string]plannedCache
}

type plannedCache struct {
	c    *middleware.PlanCache
	attr metric.MeasurementOption
}

// newPlanInstruments creates the instruments and their callback.
func newPlanInstruments(meter metric.Meter) (*planInstruments, error) {
	p := &planInstruments{caches: map[string]plannedCache{}}
	var err error
	if p.kept, err = meter.Int64ObservableGauge("ratelimit.plan.resolutions",
		metric.WithUnit("{resolution}"),
		metric.WithDescription("Plan and zone resolutions a plan cache keeps (middleware.WithPlans).")); err != nil {
		return nil, err
	}
	if p.hits, err = meter.Int64ObservableCounter("ratelimit.plan.resolution.hits",
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose plan and zone a plan cache had resolved.")); err != nil {
		return nil, err
	}
	if p.misses, err = meter.Int64ObservableCounter("ratelimit.plan.resolution.misses",
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests whose plan and zone a plan cache resolved then: each one a resolution.")); err != nil {
		return nil, err
	}
	_, err = meter.RegisterCallback(p.observe, p.kept, p.hits, p.misses)
	return p, err
}

func (p *planInstruments) observe(_ context.Context, o metric.Observer) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pc := range p.caches {
		s := pc.c.Stats()
		o.ObserveInt64(p.kept, s.Kept, pc.attr)
		o.ObserveInt64(p.hits, s.Hits, pc.attr)
		o.ObserveInt64(p.misses, s.Misses, pc.attr)
	}
	return nil
}

// ObservePlanCache reports c's counts, with the attribute
// ratelimit.plan.cache=name, read at each collection:
// ratelimit.plan.resolutions (a gauge: the resolutions kept),
// ratelimit.plan.resolution.hits and ratelimit.plan.resolution.misses
// (counters: requests whose plan and zone were found resolved, and
// not), as middleware/metrics names them. Misses that keep rising while
// the resolutions stay at the cache's bound say that the plans in use
// outgrow it (middleware.NewPlanCache). A name is not empty and names
// one cache.
func (m *Metrics) ObservePlanCache(name string, c *middleware.PlanCache) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: ObservePlanCache: empty name", ErrInvalidOption)
	case c == nil:
		return fmt.Errorf("%w: ObservePlanCache(%q): cache is nil", ErrInvalidOption, name)
	}
	m.plans.mu.Lock()
	defer m.plans.mu.Unlock()
	if _, ok := m.plans.caches[name]; ok {
		return fmt.Errorf("%w: ObservePlanCache(%q): a cache of that name is observed already", ErrInvalidOption, name)
	}
	m.plans.caches[name] = plannedCache{c: c, attr: metric.WithAttributeSet(attribute.NewSet(planCacheKey.String(name)))}
	return nil
}
