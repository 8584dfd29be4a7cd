package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestNewRefuses: every bad argument is New's error, wrapping
// ErrInvalidOption and naming the option, never a call's.
func TestNewRefuses(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
	renamed, err := headers.New(headers.WithNames(headers.Names{Limit: "X-Rate!Limit"}))
	if err != nil {
		t.Fatal(err)
	}
	var nilLimiter *limiter.Limiter
	tests := []struct {
		name string
		lim  middleware.Limiter
		opts []grpclimit.Option
		want string
	}{
		{"nil_limiter", nil, nil, "limiter is nil"},
		{"typed_nil_limiter", nilLimiter, nil, "limiter is a nil *limiter.Limiter"},
		{"nil_option", l, []grpclimit.Option{nil}, "nil Option 0"},
		{"nil_key", l, []grpclimit.Option{grpclimit.WithKey(nil)}, "WithKey(nil)"},
		{"nil_methods", l, []grpclimit.Option{grpclimit.WithMethods(nil)}, "WithMethods(nil)"},
		{"nil_exempt", l, []grpclimit.Option{grpclimit.WithExempt(nil)}, "WithExempt(nil)"},
		{"nil_cost", l, []grpclimit.Option{grpclimit.WithCost(nil)}, "WithCost(nil)"},
		{"nil_observer", l, []grpclimit.Option{grpclimit.WithObserver(nil)}, "WithObserver(nil)"},
		{"nil_headers", l, []grpclimit.Option{grpclimit.WithHeaders(nil)}, "WithHeaders(nil)"},
		{"nil_key_error_handler", l, []grpclimit.Option{grpclimit.WithKeyErrorHandler(nil)}, "WithKeyErrorHandler(nil)"},
		{"extra_nil_limiter", l, []grpclimit.Option{grpclimit.WithLimiter(nil, grpclimit.PeerHost())}, "WithLimiter (limiter 1)"},
		{"extra_nil_key", l, []grpclimit.Option{grpclimit.WithLimiter(l, nil)}, "key function is nil"},
		{"too_many_limiters", l, []grpclimit.Option{
			grpclimit.WithLimiter(l, grpclimit.PeerHost()), grpclimit.WithLimiter(l, grpclimit.PeerHost()),
			grpclimit.WithLimiter(l, grpclimit.PeerHost()), grpclimit.WithLimiter(l, grpclimit.PeerHost()),
		}, "5 limiters, at most 4"},
		{"method_not_full", l, []grpclimit.Option{grpclimit.WithMethods(map[string]middleware.Limiter{"Check": l})}, `"Check" is not a full method name`},
		{"method_nil_limiter", l, []grpclimit.Option{grpclimit.WithMethods(map[string]middleware.Limiter{checkMethod: nil})}, "the limiter of " + checkMethod},
		{"name_not_metadata", l, []grpclimit.Option{grpclimit.WithHeaders(renamed)}, `"x-rate!limit"`},
		{"max_pushback_zero", l, []grpclimit.Option{grpclimit.WithMaxPushback(0)}, "WithMaxPushback(0s)"},
		{"max_pushback_negative", l, []grpclimit.Option{grpclimit.WithMaxPushback(-time.Minute)}, "WithMaxPushback(-1m0s)"},
		{"max_pushback_past_32_bits", l, []grpclimit.Option{grpclimit.WithMaxPushback(math.MaxInt32*time.Millisecond + time.Millisecond)}, "WithMaxPushback(596h31m23.648s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ic, err := grpclimit.New(tt.lim, tt.opts...)
			if ic != nil || !errors.Is(err, grpclimit.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, %v; want an ErrInvalidOption naming %q", ic, err, tt.want)
			}
		})
	}
}

// TestMaxPushbackBounds: the shortest bound and the longest gRFC A6's
// pushback can carry are accepted.
func TestMaxPushbackBounds(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
	for _, d := range []time.Duration{time.Nanosecond, time.Minute, math.MaxInt32 * time.Millisecond} {
		if _, err := grpclimit.New(l, grpclimit.WithMaxPushback(d)); err != nil {
			t.Errorf("New(WithMaxPushback(%v)): %v, want no error", d, err)
		}
	}
}

// TestKeyFailures: a call without a key is INVALID_ARGUMENT (KeyError); a
// key function that is misconfigured is INTERNAL (Misconfigured), and one
// that fails otherwise INTERNAL too (KeyFailed); none charges anything or runs the handler, and no
// answer carries the error's text.
func TestKeyFailures(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
	for _, tt := range []struct {
		name    string
		key     grpclimit.KeyFunc
		code    codes.Code
		outcome middleware.Outcome
	}{
		{"no_key", grpclimit.Must(grpclimit.Metadata("x-api-key")), codes.InvalidArgument, middleware.KeyError},
		{"empty_key", fixedKey(""), codes.InvalidArgument, middleware.KeyError},
		{"misconfigured", failingKey(fmt.Errorf("%w: %w: no route", keyfunc.ErrMisconfigured, keyfunc.ErrNoKey)), codes.Internal, middleware.Misconfigured},
		{"other_error", failingKey(errors.New("session store 10.9.9.9 down")), codes.Internal, middleware.KeyFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var seen middleware.Outcome
			ic := newInterceptor(t, l, grpclimit.WithKey(tt.key), grpclimit.WithFailOpen(),
				grpclimit.WithObserver(func(e middleware.Event) { seen = e.Outcome }))
			ran := false
			_, err := ic.Unary()(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) {
				ran = true
				return nil, nil
			})
			st := status.Convert(err)
			if st.Code() != tt.code || ran || seen != tt.outcome || strings.Contains(st.Message(), "10.9.9.9") {
				t.Fatalf("got %v (handler ran %v, outcome %v); want %v, %v", st, ran, seen, tt.code, tt.outcome)
			}
		})
	}
}

// failingKey fails every call with err.
func failingKey(err error) grpclimit.KeyFunc {
	return func(context.Context, string) (string, error) { return "", err }
}
