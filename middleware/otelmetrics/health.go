package otelmetrics

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

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

// ObserveStore records the Redis store's health changes in
// ratelimit.store.health, attributed by ratelimit.store.node (a Redis
// server, as redisstore.Event.Node names it; never a client): pass
// m.ObserveStore to redisstore.WithObserver. A node appears at its first
// change (none means it has been healthy since start) and keeps its last
// value. Other events (corrupt values, risky settings) are for a log:
// they are ignored here.
func (m *Metrics) ObserveStore(e redisstore.Event) {
	if e.Kind != redisstore.HealthChanged {
		return
	}
	m.health.Record(context.Background(), healthValue(e.To),
		metric.WithAttributeSet(attribute.NewSet(nodeKey.String(e.Node))))
}

var _ func(redisstore.Event) = (*Metrics)(nil).ObserveStore
