package otelmetrics

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/reason"
)

// ScopeName is the instrumentation scope of the meter New obtains.
const ScopeName = "github.com/fixedwindow/ratelimit/middleware/otelmetrics"

// defaultBuckets are the bucket boundaries of ratelimit.decision.duration,
// in seconds: from 50µs (an in-memory decision) to 1s (a store timing
// out), as middleware/metrics's.
var defaultBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// The attributes, named in the package documentation.
const (
	policyKey     = attribute.Key("ratelimit.policy")
	outcomeKey    = attribute.Key("ratelimit.outcome")
	reasonKey     = attribute.Key("ratelimit.reason")
	nodeKey       = attribute.Key("ratelimit.store.node")
	limitKey      = attribute.Key("ratelimit.limit")
	remainingKey  = attribute.Key("ratelimit.remaining")
	retryAfterKey = attribute.Key("ratelimit.retry_after")
)

// spanEventName names the event Observe adds to a recording span.
const spanEventName = "ratelimit.decision"

// Errors returned by this package.
var (
	// ErrInvalidOption reports a bad argument to New or to one of its
	// options.
	ErrInvalidOption = errors.New("otelmetrics: invalid option")
)

// Metrics holds the instruments. Its Observe method is an
// observer for middleware.WithObserver; its ObserveStore method is an observer for
// redisstore.WithObserver. The zero Metrics is not usable; call New.
type Metrics struct {
	decisions metric.Int64Counter
	errors    metric.Int64Counter
	duration  metric.Float64Histogram
	inFlight  metric.Int64UpDownCounter
	health    metric.Float64Gauge
	reason    func(error) string
	policies  policyCache
	plans     *planInstruments
}

// An Option configures New.
type Option func(*config)

type config struct {
	buckets []float64
	reason  func(error) string
}

// WithBuckets replaces the histogram's bucket boundaries, in seconds.
// Bounds must increase. The default runs from 50µs (an in-memory
// decision) to 1s (a store timing out), as middleware/metrics's: .00005,
// .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1. A View registered with the
// MeterProvider overrides them.
func WithBuckets(b []float64) Option {
	return func(c *config) { c.buckets = append([]float64{}, b...) }
}

// WithReason replaces reason.Of, the function that names the reason of a
// store error (not nil). It must return one of a few fixed strings: each
// one becomes an attribute value.
func WithReason(f func(error) string) Option { return func(c *config) { c.reason = f } }

// validate checks the whole configuration, as every package of this
// module does: options only set fields.
func (c *config) validate() error {
	if c.reason == nil {
		return fmt.Errorf("%w: reason function is nil", ErrInvalidOption)
	}
	if len(c.buckets) == 0 {
		return fmt.Errorf("%w: no buckets", ErrInvalidOption)
	}
	for i := 1; i < len(c.buckets); i++ {
		if c.buckets[i] <= c.buckets[i-1] {
			return fmt.Errorf("%w: bucket %v does not increase on %v", ErrInvalidOption, c.buckets[i], c.buckets[i-1])
		}
	}
	return nil
}

// New creates the instruments from mp's meter named ScopeName.
func New(mp metric.MeterProvider, opts ...Option) (*Metrics, error) {
	if mp == nil {
		return nil, fmt.Errorf("%w: meter provider is nil", ErrInvalidOption)
	}
	c := config{buckets: defaultBuckets, reason: reason.Of}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	meter := mp.Meter(ScopeName)
	m := &Metrics{reason: c.reason}
	var errs [5]error
	m.decisions, errs[0] = meter.Int64Counter("ratelimit.decisions",
		metric.WithUnit("{decision}"),
		metric.WithDescription("Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled)."))
	m.errors, errs[1] = meter.Int64Counter("ratelimit.store.errors",
		metric.WithUnit("{error}"),
		metric.WithDescription("Decisions and settles the limiter could not make, by policy and reason."))
	m.duration, errs[2] = meter.Float64Histogram("ratelimit.decision.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time the limiter took to answer, by policy."),
		metric.WithExplicitBucketBoundaries(c.buckets...))
	// No unit: "1" would make the Prometheus exporter's name
	// ratelimit_store_health_ratio, not the Prometheus adapter's.
	m.health, errs[3] = meter.Float64Gauge("ratelimit.store.health",
		metric.WithDescription("Health of each Redis server the store decides on, as it last changed: 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable."))
	m.inFlight, errs[4] = meter.Int64UpDownCounter("ratelimit.in_flight",
		metric.WithUnit("{request}"),
		metric.WithDescription("Requests holding a slot of each in-flight cap, on this replica."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("otelmetrics: create instruments: %w", err)
	}
	var err error
	if m.plans, err = newPlanInstruments(meter); err != nil {
		return nil, fmt.Errorf("otelmetrics: create instruments: %w", err)
	}
	return m, nil
}

// Observe records one middleware event, and adds it to the request's span
// if that is recording. Pass m.Observe to middleware.WithObserver (and
// grpclimit.WithObserver).
func (m *Metrics) Observe(e middleware.Event) {
	ctx := context.Background()
	if e.Request != nil {
		ctx = e.Request.Context() // for exemplars, and the span
	}
	pm := m.policies.get(e.Policy)
	o := pm.outcome(e.Outcome)
	m.decisions.Add(ctx, 1, o.add...)
	why := ""
	if e.Outcome == middleware.Error || e.Outcome == middleware.Settled && e.Err != nil {
		why = m.reason(e.Err)
		m.errors.Add(ctx, 1, pm.errorOptions(why)...)
	}
	if pm.inFlight != nil {
		switch e.Outcome {
		case middleware.Allowed:
			m.inFlight.Add(ctx, 1, pm.inFlight...)
		case middleware.Released:
			m.inFlight.Add(ctx, -1, pm.inFlight...)
		}
	}
	if timed(e) {
		m.duration.Record(ctx, e.Duration.Seconds(), pm.duration...)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		addSpanEvent(span, pm, o, e, why)
	}
}

var _ func(middleware.Event) = (*Metrics)(nil).Observe

// timed reports whether e's duration is the limiter's answer time: every
// decision and error, even a 0 from a stopped test clock, but no key
// failure; an outcome this package does not know only with a duration.
func timed(e middleware.Event) bool {
	switch e.Outcome {
	case middleware.Allowed, middleware.Denied, middleware.ShadowDenied, middleware.Error:
		return true
	case middleware.KeyError, middleware.KeyFailed, middleware.Misconfigured, middleware.Released: // a hold time is no answer time
		return false
	}
	return e.Duration > 0
}

// addSpanEvent tells span what the limiter decided: the numbers a
// client saw in its headers, never its key.
func addSpanEvent(span trace.Span, pm *policyMetrics, o *outcomeMetrics, e middleware.Event, why string) {
	attrs := make([]attribute.KeyValue, 2, 5)
	attrs[0], attrs[1] = pm.attr, o.attr
	switch e.Outcome {
	case middleware.Allowed:
		attrs = append(attrs, limitKey.Int64(e.Decision.Limit), remainingKey.Int64(e.Decision.Remaining))
	case middleware.Denied, middleware.ShadowDenied:
		attrs = append(attrs, limitKey.Int64(e.Decision.Limit), remainingKey.Int64(e.Decision.Remaining),
			retryAfterKey.Float64(e.Decision.RetryAfter.Seconds()))
	case middleware.Error:
		attrs = append(attrs, reasonKey.String(why))
	}
	span.AddEvent(spanEventName, trace.WithAttributes(attrs...))
}
