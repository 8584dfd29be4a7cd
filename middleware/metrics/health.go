package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// healthValue is a health as the gauge reports it: 1 healthy, 0.75
// failing (calls failing, breaker still closed), 0.5 probing, 0
// unavailable, so that "below 1" means degraded.
func healthValue(h redisstore.Health) float64 {
	switch h {
	case redisstore.Unavailable:
		return 0
	case redisstore.Probing:
		return 0.5
	case redisstore.Failing:
		return 0.75
	}
	return 1
}

func newHealthGauge(namespace string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "store_health",
		Help:      "Health of each Redis server the store decides on, as it last changed: 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable.",
	}, []string{"node"})
}

// ObserveStore records the Redis store's health changes in
// ratelimit_store_health{node}: pass m.ObserveStore to
// redisstore.WithObserver. A node's series appears at its first change
// (none means it has been healthy since start) and keeps its last value.
// Other events (corrupt values, risky settings) are for a log: they are
// ignored here.
func (m *Metrics) ObserveStore(e redisstore.Event) {
	if e.Kind != redisstore.HealthChanged {
		return
	}
	m.health.WithLabelValues(e.Node).Set(healthValue(e.To))
}

var _ func(redisstore.Event) = (*Metrics)(nil).ObserveStore
