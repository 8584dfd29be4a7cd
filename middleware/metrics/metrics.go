package metrics

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/reason"
)

// defaultBuckets are the latency buckets, in seconds: from 50µs (an
// in-memory decision) to 1s (a store timing out).
var defaultBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}

// Errors returned by this package.
var (
	// ErrInvalidOption reports a bad argument to New or to one of its
	// options.
	ErrInvalidOption = errors.New("metrics: invalid option")
)

// Metrics holds the collectors. Its Observe method is an
// observer for middleware.WithObserver; its ObserveStore method is an observer for
// redisstore.WithObserver. The zero Metrics is not usable; call New.
type Metrics struct {
	decisions *prometheus.CounterVec
	errors    *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	inFlight  *prometheus.GaugeVec
	health    *prometheus.GaugeVec
	reason    func(error) string
	policies  policyCache
	plans     *plansCollector
}

// An Option configures New.
type Option func(*config)

type config struct {
	namespace string
	buckets   []float64
	reason    func(error) string
}

var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// WithNamespace replaces the metric name prefix (default "ratelimit"); it
// must be a metric name.
func WithNamespace(ns string) Option { return func(c *config) { c.namespace = ns } }

// WithBuckets replaces the latency histogram's buckets, in seconds.
// Bounds must increase. The default runs from 50µs (an in-memory
// decision) to 1s (a store timing out): .00005, .0001, .00025, .0005,
// .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1.
func WithBuckets(b []float64) Option {
	return func(c *config) { c.buckets = append([]float64{}, b...) }
}

// WithReason replaces the function that names the reason of a store
// error (not nil; default reason.Of, which middleware/otelmetrics uses
// too, so that both adapters name a failure alike). It must return one
// of a few fixed strings: each one becomes a label value.
func WithReason(f func(error) string) Option { return func(c *config) { c.reason = f } }

// validate checks the whole configuration, as every package of this
// module does: options only set fields.
func (c *config) validate() error {
	switch {
	case !nameRE.MatchString(c.namespace):
		return fmt.Errorf("%w: namespace %q is not a metric name", ErrInvalidOption, c.namespace)
	case c.reason == nil:
		return fmt.Errorf("%w: reason function is nil", ErrInvalidOption)
	}
	return checkBuckets(c.buckets)
}

// checkBuckets reports bucket bounds that are missing or do not increase.
func checkBuckets(b []float64) error {
	if len(b) == 0 {
		return fmt.Errorf("%w: no buckets", ErrInvalidOption)
	}
	for i := 1; i < len(b); i++ {
		if b[i] <= b[i-1] {
			return fmt.Errorf("%w: bucket %v does not increase on %v", ErrInvalidOption, b[i], b[i-1])
		}
	}
	return nil
}

// New creates the collectors and registers them with reg.
func New(reg prometheus.Registerer, opts ...Option) (*Metrics, error) {
	if reg == nil {
		return nil, fmt.Errorf("%w: registerer is nil", ErrInvalidOption)
	}
	c := config{namespace: "ratelimit", buckets: defaultBuckets, reason: reason.Of}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		o(&c)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.namespace,
			Name:      "decisions_total",
			Help:      "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		}, []string{"policy", "outcome"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: c.namespace,
			Name:      "store_errors_total",
			Help:      "Decisions and settles the limiter could not make, by policy and reason.",
		}, []string{"policy", "reason"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: c.namespace,
			Name:      "decision_duration_seconds",
			Help:      "Time the limiter took to answer, by policy.",
			Buckets:   c.buckets,
		}, []string{"policy"}),
		inFlight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: c.namespace,
			Name:      "in_flight",
			Help:      "Requests holding a slot of each in-flight cap, on this replica.",
		}, []string{"policy"}),
		health: newHealthGauge(c.namespace),
		reason: c.reason,
		plans:  newPlansCollector(c.namespace),
	}
	for _, col := range []prometheus.Collector{m.decisions, m.errors, m.duration, m.inFlight, m.health, m.plans} {
		if err := reg.Register(col); err != nil {
			return nil, fmt.Errorf("metrics: register: %w", err)
		}
	}
	return m, nil
}

// Observe records one middleware event. Pass m.Observe to
// middleware.WithObserver (and grpclimit.WithObserver).
func (m *Metrics) Observe(e middleware.Event) {
	pm := m.policies.get(m, e.Policy)
	if int(e.Outcome) < len(pm.outcomes) && pm.outcomes[e.Outcome] != nil {
		pm.outcomes[e.Outcome].Inc()
	} else {
		m.decisions.WithLabelValues(pm.name, e.Outcome.String()).Inc()
	}
	if e.Outcome == middleware.Error || e.Outcome == middleware.Settled && e.Err != nil {
		m.errors.WithLabelValues(pm.name, m.reason(e.Err)).Inc()
	}
	if pm.inFlight != nil {
		switch e.Outcome {
		case middleware.Allowed:
			pm.inFlight.Inc()
		case middleware.Released:
			pm.inFlight.Dec()
		}
	}
	if timed(e) {
		pm.duration.Observe(e.Duration.Seconds())
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
