// Package otelmetrics reports the decisions of package middleware, and
// the Redis store's health, through OpenTelemetry: metrics from any
// metric.MeterProvider, and an event on the request's span when it is
// recording. It is the OpenTelemetry twin of middleware/metrics
// (Prometheus), with the same outcomes, reasons and buckets, in a module
// of its own so that the root module never requires OpenTelemetry.
//
// Instruments, attributed by policy name and never by key, address or
// user (attributes that would identify clients and grow without bound):
//
//	ratelimit.decisions          int64 counter     ratelimit.policy, ratelimit.outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released)
//	ratelimit.store.errors       int64 counter     ratelimit.policy, ratelimit.reason (reason.Of: timeout, unavailable, circuit_open, out_of_memory, ...)
//	ratelimit.decision.duration  float64 histogram ratelimit.policy; seconds, buckets from 50µs to 1s
//	ratelimit.in_flight          int64 up-down     ratelimit.policy; requests holding a slot of an in-flight cap, on this replica
//	ratelimit.store.health       float64 gauge     ratelimit.store.node; 1 healthy, 0.75 failing, 0.5 probing, 0 unavailable
//
// An in-flight cap (middleware.WithInFlight) is a policy like the others,
// named by its name: its decisions are counted by outcome, timed, and
// each admission adds one to ratelimit.in_flight until its release
// (outcome released) takes it off. Give caps names of their own: a cap
// and a rate policy of one name would share series.
//
// Observe feeds the first four and the span event (pass it to
// middleware.WithObserver); ObserveStore feeds the gauge (pass it to
// redisstore.WithObserver). When the request's context carries a
// recording span, Observe adds to it an event ratelimit.decision with
// ratelimit.policy, ratelimit.outcome, and ratelimit.limit and
// ratelimit.remaining of the decision (ratelimit.retry_after, in seconds,
// on a refusal; ratelimit.reason on an error), so that a trace shows why
// a request was refused. Never the key.
//
// Use:
//
//	m, err := otelmetrics.New(otel.GetMeterProvider())
//	if err != nil {
//		log.Fatal(err)
//	}
//	store, err := redisstore.New(client, redisstore.WithObserver(m.ObserveStore))
//	...
//	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
package otelmetrics
