package metrics

import (
	"context"
	"errors"
	"net"

	"github.com/sony/gobreaker/v2"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Reason names why a limiter could not decide, from a fixed set so that
// it can be a label:
//
//	canceled      the request's context was cancelled (the client left)
//	timeout       a deadline passed, or a network operation timed out
//	closed        the limiter or its store was closed
//	circuit_open  a circuit breaker refused to call the store
//	unavailable   the store could not be reached (a network error)
//	invalid       the request was invalid (cost ≤ 0, empty key, bad policy)
//	other         anything else
func Reason(err error) string {
	var netErr net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, limiter.ErrClosed):
		return "closed"
	case errors.Is(err, gobreaker.ErrOpenState), errors.Is(err, gobreaker.ErrTooManyRequests):
		return "circuit_open"
	case netErr != nil:
		return "unavailable"
	case errors.Is(err, limiter.ErrInvalidCost), errors.Is(err, limiter.ErrInvalidKey), errors.Is(err, limiter.ErrInvalidPolicy):
		return "invalid"
	default:
		return "other"
	}
}
