package otelmetrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
)

func newBenchMetrics(b *testing.B) *otelmetrics.Metrics {
	b.Helper()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	b.Cleanup(func() { mp.Shutdown(context.Background()) })
	m, err := otelmetrics.New(mp)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkObserve measures one event on the SDK's MeterProvider, the
// cost the adapter adds to every request: an admission timed at 40µs,
// from a request without a span, and from one whose span records (the
// event, and the SDK's exemplars).
func BenchmarkObserve(b *testing.B) {
	m := newBenchMetrics(b)
	p := limiter.MustPolicy("api", limiter.PerMinute(100))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(tracetest.NewSpanRecorder()))
	b.Cleanup(func() { tp.Shutdown(context.Background()) })
	ctx, span := tp.Tracer("bench").Start(context.Background(), "GET /")
	defer span.End()
	for _, v := range []struct {
		name string
		r    *http.Request
	}{
		{"span=none", httptest.NewRequest(http.MethodGet, "/", nil)},
		{"span=recording", httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)},
	} {
		e := middleware.Event{Request: v.r, Policy: p, Outcome: middleware.Allowed, Decision: limiter.Decision{Allowed: true, Limit: 100, Remaining: 99}, Duration: 40 * time.Microsecond}
		b.Run(v.name+",serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m.Observe(e)
			}
		})
		if v.name == "span=recording" {
			continue // one span's events are not for concurrent appends at this rate
		}
		b.Run(v.name+",parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m.Observe(e)
				}
			})
		})
	}
}

// BenchmarkMiddleware measures the middleware with and without the
// adapter on the allow path: 10,000 client addresses, the in-memory
// store, a policy no client reaches, requests without a span.
func BenchmarkMiddleware(b *testing.B) {
	const clients = 10_000
	reqs := make([]*http.Request, clients)
	for i := range reqs {
		r, err := http.NewRequest(http.MethodGet, "http://example.test/api/items", nil)
		if err != nil {
			b.Fatal(err)
		}
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":" + strconv.Itoa(40000+i%20000)
		reqs[i] = r
	}
	l, err := limiter.New(limiter.MustPolicy("bench", limiter.PerMinute(100_000_000_000)))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m := newBenchMetrics(b)
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, v := range []struct {
		name string
		opts []middleware.Option
	}{
		{"middleware", nil},
		{"middleware+otelmetrics", []middleware.Option{middleware.WithObserver(m.Observe)}},
	} {
		mw, err := middleware.New(l, v.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("handler="+v.name, func(b *testing.B) { serveParallel(b, mw(bare), reqs) })
	}
}

// serveParallel sends reqs through h from b.RunParallel's goroutines,
// each from its own place in the rotation, and fails the benchmark if an
// answer was not 200.
func serveParallel(b *testing.B, h http.Handler, reqs []*http.Request) {
	var start, refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: make(http.Header, 8)}
		i := int(start.Add(7919))
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
		refused.Add(int64(w.notOK))
	})
	if n := refused.Load(); n > 0 {
		b.Fatalf("%d requests were not answered 200; the benchmark measures the allow path", n)
	}
}

// benchWriter keeps one header map per goroutine and counts answers
// other than 200.
type benchWriter struct {
	h     http.Header
	notOK int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.notOK++
	}
}
