package metrics

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/middleware"
)

// plansCollector exports the counts of the plan caches given to
// ObservePlanCache, read at each scrape: nothing on the request path.
type plansCollector struct {
	kept, hits, misses *prometheus.Desc
	mu                 sync.Mutex
	caches             map[string]*middleware.PlanCache
}

func newPlansCollector(namespace string) *plansCollector {
	label := []string{"cache"}
	return &plansCollector{
		kept: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "plan_resolutions"),
			"Plan and zone resolutions a plan cache keeps (middleware.WithPlans).", label, nil),
		hits: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "plan_resolution_hits_total"),
			"Requests whose plan and zone a plan cache had resolved.", label, nil),
		misses: prometheus.NewDesc(prometheus.BuildFQName(namespace, "", "plan_resolution_misses_total"),
			"Requests whose plan and zone a plan cache resolved then: each one a resolution.", label, nil),
		caches: map[string]*middleware.PlanCache{},
	}
}

func (c *plansCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.kept
	ch <- c.hits
	ch <- c.misses
}

func (c *plansCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, pc := range c.caches {
		s := pc.Stats()
		ch <- prometheus.MustNewConstMetric(c.kept, prometheus.GaugeValue, float64(s.Kept), name)
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.Hits), name)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.Misses), name)
	}
}

// ObservePlanCache exports c's counts, labelled cache=name, read at each
// scrape: ratelimit_plan_resolutions (a gauge: the resolutions kept),
// ratelimit_plan_resolution_hits_total and
// ratelimit_plan_resolution_misses_total (counters: requests whose plan
// and zone were found resolved, and not). Misses that keep rising while
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
	m.plans.caches[name] = c
	return nil
}
