// Package metrics counts the decisions of package middleware in Prometheus
// metrics, so that the limiter core and the middleware never import
// Prometheus.
//
// Four metrics of decisions, labelled by policy name and never by key,
// address or user (labels that would identify clients and grow without
// bound), and one of the Redis store's health:
//
//	ratelimit_decisions_total{policy, outcome}     outcome: allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released
//	ratelimit_store_errors_total{policy, reason}   reason: canceled, timeout, closed, unavailable, circuit_open, invalid, other, or the store's own (out_of_memory, permission_denied, ...)
//	ratelimit_decision_duration_seconds{policy}    histogram of the limiter's answer time
//	ratelimit_in_flight{policy}                    requests holding a slot of an in-flight cap, on this replica
//	ratelimit_store_health{node}                   1 healthy, 0.75 failing, 0.5 probing, 0 unavailable, per Redis server
//
// An in-flight cap (middleware.WithInFlight) is a policy like the others,
// named by its name: its decisions are counted by outcome, timed, and
// each admission adds one to its ratelimit_in_flight until its release
// (outcome released) takes it off. Give caps names of their own: a cap
// and a rate policy of one name would share series.
//
// Observe feeds the first four (pass it to middleware.WithObserver),
// ObserveStore the last (pass it to redisstore.WithObserver); node names a
// Redis server as redisstore.Event.Node does, never a client.
//
// A policy's decision series are created, at zero, for every outcome when
// its first event arrives, so that rates over them are defined at once.
//
// Importing this package imports Prometheus's client_golang/prometheus,
// which imports expvar, and expvar registers /debug/vars on
// http.DefaultServeMux: a program that serves DefaultServeMux to the
// internet exposes its memory statistics there, with or without this
// package, once it uses Prometheus. Serve your own mux, or put
// /debug/vars behind authentication. The packages of the root module
// register nothing (internal/sideeffects tests it).
//
// Use:
//
//	m, err := metrics.New(prometheus.DefaultRegisterer)
//	if err != nil {
//		log.Fatal(err)
//	}
//	store, err := redisstore.New(client, redisstore.WithObserver(m.ObserveStore))
//	...
//	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
//
// This package is a module of its own, so that the root module's go.mod
// does not require Prometheus.
package metrics
