package otelmetrics_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
)

// Count the decisions of a limit of 2 per client, three requests from
// one client, and read them back with a manual reader; the refusal is
// also an event on the request's span. A server reads the MeterProvider
// with an exporter instead (example/observe/otel). The limiter's clock is
// stopped so that the example cannot straddle a window's end.
func ExampleNew() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	defer tp.Shutdown(context.Background())

	m, err := otelmetrics.New(mp)
	if err != nil {
		log.Fatal(err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(2)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, addr := range []string{"192.0.2.1:1", "192.0.2.1:2", "192.0.2.1:3"} {
		ctx, span := tp.Tracer("example").Start(context.Background(), "GET /")
		r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		h.ServeHTTP(httptest.NewRecorder(), r)
		span.End()
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s %s: %d\n", mt.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					fmt.Printf("%s %s: %d observations\n", mt.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Count)
				}
			}
		}
	}
	last := spans.Ended()[2].Events()[0]
	fmt.Printf("span event %s:", last.Name)
	for _, kv := range last.Attributes {
		fmt.Printf(" %s=%s", kv.Key, kv.Value.String())
	}
	fmt.Println()
	// Unordered output:
	// ratelimit.decisions ratelimit.outcome=allowed,ratelimit.policy=api: 2
	// ratelimit.decisions ratelimit.outcome=denied,ratelimit.policy=api: 1
	// ratelimit.decision.duration ratelimit.policy=api: 3 observations
	// span event ratelimit.decision: ratelimit.policy=api ratelimit.outcome=denied ratelimit.limit=2 ratelimit.remaining=0 ratelimit.retry_after=3570
}
