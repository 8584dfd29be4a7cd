package grpclimit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestKeyErrorHandler: under WithFailOpen, a call with an unknown API key
// (the key function's ErrNoKey), a call with none, and a call the plan
// lookup knows no customer for, each unary and streaming, get the
// status WithKeyErrorHandler chooses, UNAUTHENTICATED; the handler never
// runs, nothing is charged, the observer sees KeyError, and
// WithErrorHandler is not asked. A known key is served.
func TestKeyErrorHandler(t *testing.T) {
	md := grpclimit.Must(grpclimit.Metadata("x-api-key"))
	known := grpclimit.KeyFunc(func(ctx context.Context, method string) (string, error) {
		k, err := md(ctx, method)
		if err == nil && k != "hdr:X-Api-Key:key-asha" && k != "hdr:X-Api-Key:key-noplan" {
			return "", fmt.Errorf("%w: unknown API key", keyfunc.ErrNoKey)
		}
		return k, err
	})
	for _, tc := range []struct {
		name string
		md   []string
		want codes.Code
	}{
		{"known_key", []string{"x-api-key", "key-asha"}, codes.OK},
		{"unknown_key", []string{"x-api-key", "key-mallory"}, codes.Unauthenticated},
		{"missing_key", nil, codes.Unauthenticated},
		{"no_plan_for_key", []string{"x-api-key", "key-noplan"}, codes.Unauthenticated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
			var (
				mu      sync.Mutex
				events  []middleware.Event
				served  atomic.Int64
				onError atomic.Int64
			)
			plan := &limiter.Plan{Name: "gold", Limits: map[string][]int64{"api": {10}}}
			ic := newInterceptor(t, l,
				grpclimit.WithKey(known),
				grpclimit.WithFailOpen(),
				grpclimit.WithPlans(func(ctx context.Context, method string) (*limiter.Plan, string, error) {
					if k, _ := md(ctx, method); k == "hdr:X-Api-Key:key-noplan" {
						return nil, "", fmt.Errorf("%w: no customer has this key", keyfunc.ErrNoKey)
					}
					return plan, "", nil
				}),
				grpclimit.WithObserver(func(e middleware.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }),
				grpclimit.WithErrorHandler(func(context.Context, string, error) error {
					onError.Add(1)
					return status.Error(codes.Internal, "error handler")
				}),
				grpclimit.WithKeyErrorHandler(func(_ context.Context, _ string, err error) error {
					if !errors.Is(err, keyfunc.ErrNoKey) {
						t.Errorf("key error handler got %v, want an error wrapping ErrNoKey", err)
					}
					return status.Error(codes.Unauthenticated, "unknown API key")
				}),
			)
			count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
				served.Add(1)
				return h(ctx, req)
			}
			countStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
				served.Add(1)
				return h(srv, ss)
			}
			client := serve(t, grpc.ChainUnaryInterceptor(ic.Unary(), count), grpc.ChainStreamInterceptor(ic.Stream(), countStream))
			unary, stream := check(t, client, tc.md...), watch(t, client, tc.md...)
			for _, a := range []answer{unary, stream} {
				if a.code != tc.want {
					t.Errorf("got %v, want %v", a.st, tc.want)
				}
			}
			wantServed, wantUsed := int64(2), int64(2)
			if tc.want != codes.OK {
				wantServed, wantUsed = 0, 0
				if unary.st.Message() != "unknown API key" {
					t.Errorf("message %q, want the handler's", unary.st.Message())
				}
				mu.Lock()
				for _, e := range events {
					if e.Outcome != middleware.KeyError {
						t.Errorf("observer saw %v, want KeyError only", e.Outcome)
					}
				}
				if len(events) != 2 {
					t.Errorf("observer saw %d events, want 2", len(events))
				}
				mu.Unlock()
			}
			if served.Load() != wantServed || onError.Load() != 0 {
				t.Errorf("handler ran %d times (want %d), error handler %d (want 0)", served.Load(), wantServed, onError.Load())
			}
			for _, k := range []string{"hdr:X-Api-Key:key-asha", "hdr:X-Api-Key:key-mallory", "hdr:X-Api-Key:key-noplan"} {
				u, err := l.Usage(context.Background(), k)
				if err != nil {
					t.Fatal(err)
				}
				if want := map[bool]int64{true: wantUsed}[tc.md != nil && k == "hdr:X-Api-Key:"+tc.md[1]]; u.Windows[0].Used != want {
					t.Errorf("%s used %d, want %d", k, u.Windows[0].Used, want)
				}
			}
		})
	}
}
