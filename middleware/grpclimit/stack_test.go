package grpclimit_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestStackedLimitsOneSetOfMetadata: two limits, given to one Interceptor
// (WithLimiter) or as two chained Interceptors, send one value per
// metadata name, describing the more restrictive decision, and the
// draft's ratelimit-policy lists both policies; the refusal of the
// inner limit is answered once, naming both, and charges the outer.
func TestStackedLimitsOneSetOfMetadata(t *testing.T) {
	draft, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	for _, stacking := range []string{"with_limiter", "chained"} {
		for _, call := range []struct {
			name string
			f    func(testing.TB, healthpb.HealthClient, ...string) answer
		}{{"unary", check}, {"server_streaming", watch}} {
			t.Run(stacking+"/"+call.name, func(t *testing.T) {
				outer, _ := newLimiter(t, limiter.MustPolicy("outer", limiter.PerMinute(10)), noon30)
				inner, _ := newLimiter(t, limiter.MustPolicy("inner", limiter.PerMinute(2)), noon30)
				var ics []*grpclimit.Interceptor
				if stacking == "with_limiter" {
					ics = append(ics, newInterceptor(t, outer, grpclimit.WithHeaders(draft), grpclimit.WithLimiter(inner, grpclimit.PeerHost())))
				} else {
					ics = append(ics, newInterceptor(t, outer, grpclimit.WithHeaders(draft)), newInterceptor(t, inner, grpclimit.WithHeaders(draft)))
				}
				client := serve(t, interceptors(ics...)...)
				for i, want := range []string{"1", "0"} {
					a := call.f(t, client)
					if a.code != codes.OK {
						t.Fatalf("call %d: %v", i+1, a.st)
					}
					if got := one(t, a.header, "x-ratelimit-remaining"); got != want {
						t.Fatalf("call %d: remaining %s, want %s (the inner limit's)", i+1, got, want)
					}
					if got := one(t, a.header, "x-ratelimit-limit"); got != "2" {
						t.Fatalf("call %d: limit %s, want 2", i+1, got)
					}
					if got := one(t, a.header, "ratelimit-policy"); got != `"outer";q=10;w=60, "inner";q=2;w=60` {
						t.Fatalf("call %d: ratelimit-policy %s, want both policies", i+1, got)
					}
				}
				a := call.f(t, client)
				if a.code != codes.ResourceExhausted || len(a.header) != 0 {
					t.Fatalf("third call: %v, header %v; want RESOURCE_EXHAUSTED and no header", a.st, a.header)
				}
				if got := one(t, a.trailer, "ratelimit-policy"); got != `"outer";q=10;w=60, "inner";q=2;w=60` {
					t.Fatalf("refusal: ratelimit-policy %s, want both policies", got)
				}
				one(t, a.trailer, grpclimit.PushbackTrailer)
				d, err := outer.Allow(context.Background(), "127.0.0.1", 1)
				if err != nil || d.Remaining != 10-4 {
					t.Fatalf("outer limit after three calls and this one: %+v, %v; want 6 remaining (the refused call charged it)", d, err)
				}
			})
		}
	}
}

// TestShadowNeverRefuses: under WithShadow a call over the limit runs,
// its metadata say nothing remains and carry no retry-after, and the
// observer sees ShadowDenied.
func TestShadowNeverRefuses(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1)), noon30)
	var mu sync.Mutex
	var outcomes []middleware.Outcome
	ic := newInterceptor(t, l, grpclimit.WithShadow(), grpclimit.WithObserver(func(e middleware.Event) {
		mu.Lock()
		outcomes = append(outcomes, e.Outcome)
		mu.Unlock()
	}))
	client := serve(t, interceptors(ic)...)
	for range 2 {
		check(t, client)
	}
	a := check(t, client)
	if a.code != codes.OK || one(t, a.header, "x-ratelimit-remaining") != "0" || len(a.header.Get("retry-after")) != 0 {
		t.Fatalf("shadow refusal: %v, header %v; want OK, nothing remaining, no retry-after", a.st, a.header)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(outcomes) != 3 || outcomes[0] != middleware.Allowed || outcomes[2] != middleware.ShadowDenied {
		t.Fatalf("outcomes %v, want allowed then shadow_denied", outcomes)
	}
}

// TestExemptAndMethods: an exempt method runs uncounted and without
// metadata; a method with a limiter of its own (WithMethods) spends that
// one, and the others New's.
func TestExemptAndMethods(t *testing.T) {
	def, _ := newLimiter(t, limiter.MustPolicy("default", limiter.PerMinute(5)), noon30)
	watchLim, _ := newLimiter(t, limiter.MustPolicy("watch", limiter.PerMinute(1)), noon30)
	ic := newInterceptor(t, def,
		grpclimit.WithMethods(map[string]middleware.Limiter{watchMethod: watchLim}),
		grpclimit.WithExempt(func(_ context.Context, m string) bool { return m == checkMethod }))
	client := serve(t, interceptors(ic)...)
	for range 3 {
		if a := check(t, client); a.code != codes.OK || len(a.header.Get("x-ratelimit-limit")) != 0 {
			t.Fatalf("exempt Check: %v, header %v; want OK and no metadata", a.st, a.header)
		}
	}
	if a := watch(t, client); a.code != codes.OK || one(t, a.header, "x-ratelimit-limit") != "1" {
		t.Fatalf("Watch: %v, header %v; want OK under its own limit of 1", a.st, a.header)
	}
	if a := watch(t, client); a.code != codes.ResourceExhausted {
		t.Fatalf("second Watch: %v, want RESOURCE_EXHAUSTED", a.st)
	}
	d, err := def.Allow(context.Background(), "127.0.0.1", 1)
	if err != nil || d.Remaining != 4 {
		t.Fatalf("default limiter: %+v, %v; want untouched (4 remaining after this)", d, err)
	}
}

// TestHandlerSendsHeader: a unary handler that sends its header itself
// (grpc.SendHeader) sends the rate-limit metadata with it, once; so does
// a streaming handler that calls the stream's SendHeader.
func TestHandlerSendsHeader(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
	ic := newInterceptor(t, l, grpclimit.WithKey(fixedKey("k")))
	handler := func(ctx context.Context, _ any) (any, error) {
		if err := grpc.SendHeader(ctx, metadata.Pairs("x-own", "1")); err != nil {
			return nil, err
		}
		return nil, nil
	}
	stream := &recordingStream{ctx: context.Background()}
	ctx := grpc.NewContextWithServerTransportStream(context.Background(), stream)
	if _, err := ic.Unary()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, handler); err != nil {
		t.Fatal(err)
	}
	if got := stream.sent; len(got["x-ratelimit-limit"]) != 1 || len(got["x-own"]) != 1 {
		t.Fatalf("header sent %v, want the rate-limit metadata once and the handler's own", got)
	}
}

// A recordingStream is a grpc.ServerTransportStream that keeps what it is
// given.
type recordingStream struct {
	ctx  context.Context
	set  metadata.MD
	sent metadata.MD
}

func (s *recordingStream) Method() string { return checkMethod }
func (s *recordingStream) SetHeader(md metadata.MD) error {
	s.set = metadata.Join(s.set, md)
	return nil
}
func (s *recordingStream) SendHeader(md metadata.MD) error {
	s.sent = metadata.Join(s.set, md)
	return nil
}
func (s *recordingStream) SetTrailer(metadata.MD) error { return nil }

// TestObserverSeesTheCall: an event's Request carries the call's context
// (what otelmetrics reads for exemplars and the span) and names the
// method.
func TestObserverSeesTheCall(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), noon30)
	type marker struct{}
	var got *http.Request
	ic := newInterceptor(t, l, grpclimit.WithKey(fixedKey("k")), grpclimit.WithObserver(func(e middleware.Event) { got = e.Request }))
	ctx := context.WithValue(context.Background(), marker{}, "call")
	if _, err := ic.Unary()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Context().Value(marker{}) != "call" || got.URL.Path != checkMethod || got.Pattern != checkMethod {
		t.Fatalf("event request %+v: want the call's context and method", got)
	}
}
