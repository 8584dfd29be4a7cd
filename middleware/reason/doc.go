// Package reason names why a limiter could not decide, from a small fixed
// set, so that the name can be a metric label or attribute. Both metrics
// adapters, middleware/metrics (Prometheus) and middleware/otelmetrics
// (OpenTelemetry), name store errors with Of, and so agree.
//
// Use, in an observer:
//
//	func observe(e middleware.Event) {
//		if e.Outcome == middleware.Error {
//			failures.WithLabelValues(reason.Of(e.Err)).Inc()
//		}
//	}
package reason
