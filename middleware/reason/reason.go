package reason

import (
	"context"
	"errors"
	"net"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Of names why a limiter could not decide, from a fixed set:
//
//	canceled      the request's context was cancelled (the client left)
//	timeout       a deadline passed, or a network operation timed out
//	closed        the limiter or its store was closed
//	circuit_open  a circuit breaker refused to call the store
//	unavailable   the store could not be reached (a network error)
//	invalid       the request was invalid (cost ≤ 0, empty key, bad policy)
//	other         anything else
//
// An error with a method Reason() string names its own reason, as the
// Redis store's errors do (out_of_memory, permission_denied,
// connection_refused, dns, tls, auth, read_only, loading, circuit_open,
// ...), even when it wraps a deadline: a decision whose time ran out
// while the dials to Redis were refused is connection_refused, not a
// timeout. Only cancellation takes precedence.
func Of(err error) string {
	var (
		netErr net.Error
		named  interface{ Reason() string }
	)
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &named):
		return named.Reason()
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, limiter.ErrClosed):
		return "closed"
	case netErr != nil:
		return "unavailable"
	case errors.Is(err, limiter.ErrInvalidCost), errors.Is(err, limiter.ErrInvalidKey), errors.Is(err, limiter.ErrInvalidPolicy):
		return "invalid"
	default:
		return "other"
	}
}
