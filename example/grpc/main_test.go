package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
)

// TestBothDoorsOneBudget runs the example's servers on the shared Redis
// (a prefix of the test's own) with a limit of 4: two HTTP requests and
// two gRPC calls from one client spend it, then both doors refuse. Both
// metrics adapters observe both doors unchanged: Prometheus counts every
// decision, and OpenTelemetry puts its event on the span of each gRPC
// call, which it finds through the event's request context.
func TestBothDoorsOneBudget(t *testing.T) {
	store, err := redisstore.New(redistest.Shared(t), redisstore.WithPrefix("example-grpc-test:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	// A test clock: four requests on the real clock could straddle a
	// minute's end and find a fresh budget.
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(4)), limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })

	reg := prometheus.NewRegistry()
	prom, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	otel, err := otelmetrics.New(sdkmetric.NewMeterProvider())
	if err != nil {
		t.Fatal(err)
	}
	spans := tracetest.NewSpanRecorder()
	tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)).Tracer("test")
	observe := func(e middleware.Event) {
		prom.Observe(e)
		otel.Observe(e)
	}
	// A span around each gRPC call, as otelgrpc's server handler starts.
	traced := grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, span := tracer.Start(ctx, info.FullMethod)
		defer span.End()
		return h(ctx, req)
	})
	srv, api, err := servers(l, observe, traced)
	if err != nil {
		t.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	web := httptest.NewServer(api)
	t.Cleanup(web.Close)
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	health := healthpb.NewHealthClient(conn)

	get := func() int {
		resp, err := web.Client().Get(web.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	call := func() codes.Code {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err := health.Check(ctx, &healthpb.HealthCheckRequest{})
		return status.Code(err)
	}
	for i := range 2 {
		if code := get(); code != http.StatusOK {
			t.Fatalf("HTTP request %d: %d, want 200", i+1, code)
		}
		if code := call(); code != codes.OK {
			t.Fatalf("gRPC call %d: %v, want OK", i+1, code)
		}
	}
	if code := get(); code != http.StatusTooManyRequests {
		t.Fatalf("HTTP request 3: %d, want 429: the gRPC calls spent the budget too", code)
	}
	if code := call(); code != codes.ResourceExhausted {
		t.Fatalf("gRPC call 3: %v, want RESOURCE_EXHAUSTED", code)
	}

	counts := decisions(t, reg)
	if counts["allowed"] != 4 || counts["denied"] != 2 {
		t.Fatalf("Prometheus decisions %v, want 4 allowed and 2 denied", counts)
	}
	ended := spans.Ended()
	if len(ended) != 3 {
		t.Fatalf("%d gRPC spans, want 3", len(ended))
	}
	for _, s := range ended {
		if evs := s.Events(); len(evs) != 1 || evs[0].Name != "ratelimit.decision" {
			t.Fatalf("span %s: events %v, want the limiter's decision", s.Name(), evs)
		}
	}
}

// decisions returns ratelimit_decisions_total by outcome.
func decisions(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "ratelimit_decisions_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "outcome" {
					out[lp.GetValue()] += m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
