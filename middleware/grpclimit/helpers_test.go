package grpclimit_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// noon30 is 12:00:30 UTC, thirty seconds before a minute boundary.
var noon30 = time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)

// The health service's methods, the test's unary and server-streaming
// calls.
const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

// newLimiter returns a limiter of p on a fake clock reading at, closed
// when the test ends.
func newLimiter(t testing.TB, p *limiter.Policy, at time.Time) (*limiter.Limiter, *limitertest.Clock) {
	t.Helper()
	clk := limitertest.New(at)
	l, err := limiter.New(p, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, clk
}

// newInterceptor returns New's Interceptor, failing t on an error.
func newInterceptor(t testing.TB, l middleware.Limiter, opts ...grpclimit.Option) *grpclimit.Interceptor {
	t.Helper()
	ic, err := grpclimit.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return ic
}

// serve starts a gRPC server with grpc's health service on a loopback
// TCP port, with the server options given (the interceptors), and
// returns a client of it. Both are closed when the test ends.
func serve(t testing.TB, opts ...grpc.ServerOption) healthpb.HealthClient {
	t.Helper()
	return healthpb.NewHealthClient(serveWith(t, nil, opts...))
}

// serveWith is serve with dial options for the client: a retry policy.
func serveWith(t testing.TB, dial []grpc.DialOption, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	return serveHealth(t, health.NewServer(), dial, opts...)
}

// serveHealth is serveWith with a health service of the test's own.
func serveHealth(t testing.TB, hs healthpb.HealthServer, dial []grpc.DialOption, opts ...grpc.ServerOption) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, hs)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lis) }()
	conn, err := grpc.NewClient(lis.Addr().String(), append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, dial...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.Stop()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return conn
}

// interceptors returns the server options that install ic for unary and
// streaming calls.
func interceptors(ics ...*grpclimit.Interceptor) []grpc.ServerOption {
	var u []grpc.UnaryServerInterceptor
	var s []grpc.StreamServerInterceptor
	for _, ic := range ics {
		u, s = append(u, ic.Unary()), append(s, ic.Stream())
	}
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(u...), grpc.ChainStreamInterceptor(s...)}
}

// An answer is what a client saw of one call.
type answer struct {
	code     codes.Code
	st       *status.Status
	header   metadata.MD
	trailer  metadata.MD
	received bool // a streaming call received the first message
}

// check makes one unary Check call with the given metadata.
func check(t testing.TB, c healthpb.HealthClient, md ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, md...)
	var a answer
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&a.header), grpc.Trailer(&a.trailer))
	a.st = status.Convert(err)
	a.code = a.st.Code()
	return a
}

// watch opens a server-streaming Watch call with the given metadata,
// receives its first message, and closes it.
func watch(t testing.TB, c healthpb.HealthClient, md ...string) answer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, md...)
	s, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	var a answer
	_, err = s.Recv()
	a.received = err == nil
	a.st = status.Convert(err)
	a.code = a.st.Code()
	a.header, _ = s.Header()
	if err != nil {
		a.trailer = s.Trailer()
	}
	return a
}

// one returns the only value of md's name, failing t if there is not
// exactly one.
func one(t testing.TB, md metadata.MD, name string) string {
	t.Helper()
	vs := md.Get(name)
	if len(vs) != 1 {
		t.Fatalf("metadata %s = %q, want one value (all: %v)", name, vs, md)
	}
	return vs[0]
}

// details returns the RetryInfo and QuotaFailure of a denial, failing t
// if either is missing.
func details(t testing.TB, st *status.Status) (*errdetails.RetryInfo, *errdetails.QuotaFailure) {
	t.Helper()
	var ri *errdetails.RetryInfo
	var qf *errdetails.QuotaFailure
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.RetryInfo:
			ri = d
		case *errdetails.QuotaFailure:
			qf = d
		}
	}
	if ri == nil || qf == nil {
		t.Fatalf("status %v: details %v, want RetryInfo and QuotaFailure", st, st.Details())
	}
	return ri, qf
}
