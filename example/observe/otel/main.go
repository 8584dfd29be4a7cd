// Command otel serves an API limited to 100 requests a minute per client
// through Redis, and reports it through OpenTelemetry: metrics from a
// MeterProvider read by the Prometheus exporter on /metrics, the Redis
// servers' health beside them, and an event on each request's span,
// written to stdout. It needs a Redis at 127.0.0.1:6379.
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	otelprometheus "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
)

func main() {
	// Metrics: a MeterProvider whose reader is the Prometheus exporter. A
	// push setup would use otlpmetrichttp's exporter in a periodic reader.
	reg := prometheus.NewRegistry()
	exporter, err := otelprometheus.New(otelprometheus.WithRegisterer(reg))
	if err != nil {
		log.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer mp.Shutdown(context.Background())
	// Traces: each span to stdout as it ends; a server would batch them
	// to otlptracehttp's exporter (sdktrace.WithBatcher).
	spans, err := stdouttrace.New()
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	defer tp.Shutdown(context.Background())

	m, err := otelmetrics.New(mp)
	if err != nil {
		log.Fatal(err)
	}
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.WithObserver(m.ObserveStore))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
	if err != nil {
		log.Fatal(err)
	}
	api := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "here are the items")
	}))
	// A span around each request, as otelhttp.NewHandler would start:
	// the middleware's decision becomes an event on it.
	tracer := tp.Tracer("example/observe/otel")
	traced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), r.Pattern)
		defer span.End()
		api.ServeHTTP(w, r.WithContext(ctx))
	})

	mux := http.NewServeMux()
	mux.Handle("GET /api/items", traced)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux}
	if err := srv.ListenAndServe(); err != nil {
		log.Print(err) // and the deferred Shutdowns run
	}
}
