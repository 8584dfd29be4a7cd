package grpclimit_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// modelServer stands for a model service behind the health API: Check
// reports the tokens its "x-tokens" metadata names; Watch streams
// messages, reporting 100 tokens each, holding after the third until
// resume is closed (if set), and stopping when its client leaves.
type modelServer struct {
	healthpb.UnimplementedHealthServer
	messages int
	resume   chan struct{}
	sent     chan int // the messages Watch sent, once it returns
}

func (m *modelServer) Check(ctx context.Context, _ *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if vs := md.Get("x-tokens"); len(vs) == 1 {
		var n int64
		for _, c := range vs[0] {
			n = n*10 + int64(c-'0')
		}
		unit := "acme-tokens"
		if u := md.Get("x-unit"); len(u) == 1 {
			unit = u[0]
		}
		middleware.Report(ctx, unit, n)
	}
	return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}, nil
}

func (m *modelServer) Watch(_ *healthpb.HealthCheckRequest, s grpc.ServerStreamingServer[healthpb.HealthCheckResponse]) error {
	sent := 0
	defer func() { m.sent <- sent }()
	for i := range m.messages {
		if i == 3 && m.resume != nil {
			select {
			case <-m.resume:
			case <-s.Context().Done():
				return s.Context().Err()
			}
		}
		if err := s.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}); err != nil {
			return err
		}
		sent++
		middleware.Report(s.Context(), "acme-tokens", 100)
	}
	return nil
}

// settlements records the Settled events.
type settlements struct {
	mu     sync.Mutex
	events []middleware.Event
	more   chan struct{} // a token per event
}

func newSettlements() *settlements { return &settlements{more: make(chan struct{}, 16)} }

func (s *settlements) observe(e middleware.Event) {
	if e.Outcome == middleware.Settled {
		s.mu.Lock()
		s.events = append(s.events, e)
		s.mu.Unlock()
		s.more <- struct{}{}
	}
}

// wait returns the events once there are n, failing t after 10 s.
func (s *settlements) wait(t *testing.T, n int) []middleware.Event {
	t.Helper()
	for len(s.all()) < n {
		select {
		case <-s.more:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d settles after 10 s, want %d", len(s.all()), n)
		}
	}
	return s.all()
}

func (s *settlements) all() []middleware.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]middleware.Event(nil), s.events...)
}

// meteredLimiters returns requests (60 a minute), tokens (1000 a
// minute, acme-tokens) and bytes (content-bytes) limiters on one clock.
func meteredLimiters(t *testing.T) (requests, tokens, bytes *limiter.Limiter, clk *limitertest.Clock) {
	t.Helper()
	clk = limitertest.New(noon30)
	mk := func(p *limiter.Policy) *limiter.Limiter {
		l, err := limiter.New(p, limiter.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	return mk(limiter.MustPolicy("api", limiter.PerMinute(60))),
		mk(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens")),
		mk(limiter.MustPolicy("sent", limiter.PerMinute(1<<20)).MustUnit(limiter.UnitContentBytes)), clk
}

// used returns what key has used of l's first window.
func used(t *testing.T, l *limiter.Limiter, key string) int64 {
	t.Helper()
	u, err := l.Usage(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return u.Windows[0].Used
}

// A unary call is settled when its handler returns, at what it
// reported; a settle past the limit refuses the key until the window
// ends; each unit's metadata describe its limit.
func TestUnaryReportedSettles(t *testing.T) {
	requests, tokens, _, clk := meteredLimiters(t)
	hw, err := headers.New(headers.WithUnitHeaders())
	if err != nil {
		t.Fatal(err)
	}
	s := newSettlements()
	ic := newInterceptor(t, requests, grpclimit.WithReported(tokens, nil, nil), grpclimit.WithHeaders(hw), grpclimit.WithObserver(s.observe))
	client := healthpb.NewHealthClient(serveHealth(t, &modelServer{}, nil, interceptors(ic)...))

	if a := check(t, client, "x-tokens", "500"); a.code != codes.OK {
		t.Fatalf("first call: %v", a.st)
	}
	if got := used(t, tokens, "127.0.0.1"); got != 500 {
		t.Fatalf("reserved 1, reported 500: used %d, want 500", got)
	}
	if ev := s.all(); len(ev) != 1 || ev[0].Cost != 500 || ev[0].Request.URL.Path != checkMethod {
		t.Fatalf("settled events %+v, want one of cost 500 for %s", ev, checkMethod)
	}
	// The metadata go out when the handler sends: it reported 800 by
	// then, 1,300 of 1,000 in all (issue 36: they said the reservation,
	// 499 left).
	a := check(t, client, "x-tokens", "800")
	if a.code != codes.OK || one(t, a.header, "x-ratelimit-remaining-tokens") != "0" || one(t, a.header, "x-ratelimit-remaining-requests") != "58" {
		t.Fatalf("second call: %v %v, want OK with 0 tokens (800 reported) and 58 requests left", a.st, a.header)
	}
	if got := used(t, tokens, "127.0.0.1"); got != 1300 {
		t.Fatalf("used %d, want 1300: in debt", got)
	}
	if a := check(t, client); a.code != codes.ResourceExhausted {
		t.Fatalf("in debt: %v, want RESOURCE_EXHAUSTED", a.st)
	} else if ri, _ := details(t, a.st); ri.RetryDelay.AsDuration() != 30*time.Second {
		t.Fatalf("in debt: retry delay %v, want 30s, to the minute's end", ri.RetryDelay.AsDuration())
	}
	if got := used(t, requests, "127.0.0.1"); got != 2 {
		t.Fatalf("requests used %d, want 2: a call the tokens refused is charged by none", got)
	}
	clk.Advance(30 * time.Second)
	if a := check(t, client, "x-tokens", "5"); a.code != codes.OK {
		t.Fatalf("the next minute: %v", a.st)
	}
}

// A server stream is settled once, when it ends: not while it runs, and
// then at what the handler reported over the whole stream and the bytes
// of every message it sent.
func TestServerStreamSettlesOnceAtItsEnd(t *testing.T) {
	requests, tokens, sent, _ := meteredLimiters(t)
	s := newSettlements()
	ic := newInterceptor(t, requests, grpclimit.WithReported(tokens, nil, nil), grpclimit.WithBytes(sent, nil), grpclimit.WithObserver(s.observe))
	ms := &modelServer{messages: 5, resume: make(chan struct{}), sent: make(chan int, 1)}
	client := healthpb.NewHealthClient(serveHealth(t, ms, nil, interceptors(ic)...))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	if ev := s.all(); len(ev) != 0 {
		t.Fatalf("settled while the stream runs: %+v", ev)
	}
	close(ms.resume)
	n := 0
	for {
		if _, err := stream.Recv(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("received %d more messages, want 2", n)
	}
	size := int64(proto.Size(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}))
	ev := s.all()
	if len(ev) != 2 || ev[0].Cost != 500 || ev[1].Cost != 5*size {
		t.Fatalf("settled events %+v, want two: 500 tokens, then %d bytes", ev, 5*size)
	}
	if got := used(t, tokens, "127.0.0.1"); got != 500 {
		t.Fatalf("tokens used %d, want 500", got)
	}
	if got := used(t, sent, "127.0.0.1"); got != 5*size {
		t.Fatalf("bytes used %d, want %d", got, 5*size)
	}
}

// A stream whose client leaves is settled at what was sent before.
func TestStreamClientLeavingSettledForWhatWasSent(t *testing.T) {
	requests, tokens, sent, _ := meteredLimiters(t)
	s := newSettlements()
	ic := newInterceptor(t, requests, grpclimit.WithReported(tokens, nil, nil), grpclimit.WithBytes(sent, nil), grpclimit.WithObserver(s.observe))
	ms := &modelServer{messages: 5, resume: make(chan struct{}), sent: make(chan int, 1)}
	client := healthpb.NewHealthClient(serveHealth(t, ms, nil, interceptors(ic)...))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	stream, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := stream.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	cancel() // the client leaves while the handler waits
	if n := <-ms.sent; n != 3 {
		t.Fatalf("the handler sent %d, want 3", n)
	}
	size := int64(proto.Size(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVING}))
	if ev := s.wait(t, 2); len(ev) != 2 || ev[0].Cost != 300 || ev[1].Cost != 3*size {
		t.Fatalf("settled events %+v, want 300 tokens and %d bytes", ev, 3*size)
	}
}

// WithReported and WithBytes refuse a limit they could never settle.
func TestMeteredOptionsChecked(t *testing.T) {
	requests, tokens, sent, _ := meteredLimiters(t)
	for _, tt := range []struct {
		opt  grpclimit.Option
		want string
	}{
		{grpclimit.WithReported(requests, nil, nil), `WithReported (policy "api"): the policy counts requests`},
		{grpclimit.WithReported(sent, nil, nil), `WithReported (policy "sent"): the policy counts content-bytes`},
		{grpclimit.WithBytes(tokens, nil), `WithBytes (policy "tokens"): the policy counts acme-tokens, not content-bytes`},
		{grpclimit.WithBytes(nil, nil), `limiter is nil`},
	} {
		_, err := grpclimit.New(requests, tt.opt)
		if !errors.Is(err, grpclimit.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New: %v, want ErrInvalidOption saying %q", err, tt.want)
		}
	}
	f := limiter.MustInFlight("calls", 2)
	t.Cleanup(func() { f.Close() })
	if _, err := grpclimit.NewInFlight(f, grpclimit.WithReported(tokens, nil, nil)); err == nil || !strings.Contains(err.Error(), "WithReported does not apply to NewInFlight") {
		t.Errorf("NewInFlight with WithReported: %v", err)
	}
}

// A call an inner interceptor of the chain refuses is settled at nothing
// by the metered interceptor around it.
func TestInnerRefusalSettlesOuterAtNothing(t *testing.T) {
	requests, tokens, _, _ := meteredLimiters(t)
	route, _ := newLimiter(t, limiter.MustPolicy("route", limiter.PerMinute(1)), noon30)
	outer := newInterceptor(t, requests, grpclimit.WithReported(tokens, nil, func(context.Context, string) int64 { return 400 }))
	inner := newInterceptor(t, route)
	client := healthpb.NewHealthClient(serveHealth(t, &modelServer{}, nil, interceptors(outer, inner)...))
	if a := check(t, client, "x-tokens", "10"); a.code != codes.OK {
		t.Fatalf("first call: %v", a.st)
	}
	for range 2 {
		if a := check(t, client, "x-tokens", "10"); a.code != codes.ResourceExhausted {
			t.Fatalf("past the route's limit: %v", a.st)
		}
	}
	if got := used(t, tokens, "127.0.0.1"); got != 10 {
		t.Fatalf("tokens used %d, want 10: the refused calls cost nothing", got)
	}
}

// TestMisspeltUnitReachesTheObserver: a handler's report in a unit no
// limit around it counts is told to the interceptor's observer as a
// misconfiguration, naming the call's method; the call is served and
// settled at its reservation.
func TestMisspeltUnitReachesTheObserver(t *testing.T) {
	requests, tokens, _, _ := meteredLimiters(t)
	var (
		mu     sync.Mutex
		events []middleware.Event
	)
	ic := newInterceptor(t, requests, grpclimit.WithReported(tokens, nil, nil), grpclimit.WithObserver(func(e middleware.Event) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}))
	client := healthpb.NewHealthClient(serveHealth(t, &modelServer{}, nil, interceptors(ic)...))
	if a := check(t, client, "x-tokens", "40", "x-unit", "acme-tokenz"); a.code != codes.OK {
		t.Fatalf("call: %v, want OK: a misreport is no refusal", a.st)
	}
	mu.Lock()
	defer mu.Unlock()
	var mis *middleware.Event
	for i := range events {
		if events[i].Outcome == middleware.Misconfigured {
			mis = &events[i]
		}
	}
	if mis == nil || !errors.Is(mis.Err, middleware.ErrMisconfigured) || !strings.Contains(mis.Err.Error(), `"acme-tokenz"`) ||
		mis.Cost != 40 || mis.Request == nil || mis.Request.URL.Path != checkMethod {
		t.Fatalf("events %+v: want a Misconfigured one for %s naming acme-tokenz, cost 40", events, checkMethod)
	}
	if got := used(t, tokens, "127.0.0.1"); got != 1 {
		t.Fatalf("tokens used %d, want 1: settled at the reservation", got)
	}
}
