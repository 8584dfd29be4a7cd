// Package metrics counts the decisions of package middleware in Prometheus
// metrics, so that the limiter core and the middleware never import
// Prometheus.
//
// Three metrics, labelled by policy name and never by key, address or user
// (labels that would identify clients and grow without bound):
//
//	ratelimit_decisions_total{policy, outcome}     outcome: allowed, denied, shadow_denied, error, key_error
//	ratelimit_store_errors_total{policy, reason}   reason: canceled, timeout, closed, unavailable, circuit_open, invalid, other, or the store's own (out_of_memory, permission_denied, ...)
//	ratelimit_decision_duration_seconds{policy}    histogram of the limiter's answer time
//
// A policy's decision series are created, at zero, for every outcome when
// its first event arrives, so that rates over them are defined at once.
//
// Importing this package imports Prometheus's client_golang/prometheus,
// which imports expvar, and expvar registers /debug/vars on
// http.DefaultServeMux: a program that serves DefaultServeMux to the
// internet exposes its memory statistics there, with or without this
// package, once it uses Prometheus. Serve your own mux, or put
// /debug/vars behind authentication. The other packages of this module
// register nothing (internal/sideeffects tests it).
//
// Use:
//
//	m, err := metrics.New(prometheus.DefaultRegisterer)
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
package metrics
