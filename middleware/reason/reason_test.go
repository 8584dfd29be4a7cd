package reason_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware/reason"
)

func TestOf(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"canceled", fmt.Errorf("take: %w", context.Canceled), "canceled"},
		{"deadline", fmt.Errorf("take: %w", context.DeadlineExceeded), "timeout"},
		{"net_timeout", &net.OpError{Op: "read", Err: timeoutErr{}}, "timeout"},
		{"closed", fmt.Errorf("x: %w", limiter.ErrClosed), "closed"},
		{"breaker_open", fmt.Errorf("take: %w", redisstore.ErrCircuitOpen), "circuit_open"},
		{"breaker_half_open_full", reasoned("circuit_open"), "circuit_open"},
		{"store_named", fmt.Errorf("take: %w", reasoned("out_of_memory")), "out_of_memory"},
		// The store names a timeout by the dials that failed during it.
		{"store_named_wrapping_deadline", wrapping{"connection_refused", context.DeadlineExceeded}, "connection_refused"},
		{"refused", &net.OpError{Op: "dial", Err: errors.New("connection refused")}, "unavailable"},
		{"invalid_cost", limiter.ErrInvalidCost, "invalid"},
		{"invalid_key", limiter.ErrInvalidKey, "invalid"},
		{"invalid_policy", fmt.Errorf("%w: x", limiter.ErrInvalidPolicy), "invalid"},
		{"other", errors.New("NOSCRIPT"), "other"},
		{"nil", nil, "other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := reason.Of(tt.err); got != tt.want {
				t.Errorf("Of(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}

// reasoned is an error that names its reason, as the Redis store's do.
type reasoned string

func (r reasoned) Error() string  { return string(r) }
func (r reasoned) Reason() string { return string(r) }

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// wrapping is a named error that wraps another, as the store's errors
// wrap their causes.
type wrapping struct {
	reason string
	err    error
}

func (w wrapping) Error() string  { return w.reason + ": " + w.err.Error() }
func (w wrapping) Unwrap() error  { return w.err }
func (w wrapping) Reason() string { return w.reason }
