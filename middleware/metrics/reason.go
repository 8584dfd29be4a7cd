package metrics

import "github.com/fixedwindow/ratelimit/middleware/reason"

// Reason names why a limiter could not decide, from a fixed set so that
// it can be a label: canceled, timeout, closed, circuit_open,
// unavailable, invalid, other, or the error's own Reason() (the Redis
// store's: out_of_memory, permission_denied, ...). It is reason.Of,
// which middleware/otelmetrics uses too, so both adapters name a failure
// alike.
func Reason(err error) string { return reason.Of(err) }
