// Command grpc serves grpc's health service and an HTTP API side by side,
// both limited by one limiter through Redis: 100 calls a minute per
// client address, whichever door they come through (a gRPC Check and an
// HTTP GET spend the same budget). The decisions of both doors are
// counted in Prometheus metrics on /metrics. It needs a Redis at
// 127.0.0.1:6379.
package main

import (
	"fmt"
	"log"
	"net"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

func main() {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
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
	// One limiter for both doors: sharing a budget means sharing one
	// *limiter.Limiter.
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	srv, api, err := servers(l, m.Observe)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux() // not http.DefaultServeMux: Prometheus brings expvar's /debug/vars there
	mux.Handle("GET /api/items", api)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	lis, err := net.Listen("tcp", "127.0.0.1:50051")
	if err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(srv.Serve(lis)) }()
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}

// servers returns the gRPC server, with grpc's health service, and the
// HTTP API, both limited by l and keyed by the client's address
// (grpclimit.PeerHost and keyfunc.RemoteHost, the defaults, give one
// client one key), their decisions told to observe. opts go first: the
// interceptors they chain run around the limiter's.
func servers(l *limiter.Limiter, observe func(middleware.Event), opts ...grpc.ServerOption) (*grpc.Server, http.Handler, error) {
	ic, err := grpclimit.New(l, grpclimit.WithObserver(observe))
	if err != nil {
		return nil, nil, err
	}
	srv := grpc.NewServer(append(opts,
		grpc.ChainUnaryInterceptor(ic.Unary()),
		grpc.ChainStreamInterceptor(ic.Stream()),
	)...)
	healthpb.RegisterHealthServer(srv, health.NewServer())

	mw, err := middleware.New(l, middleware.WithObserver(observe))
	if err != nil {
		return nil, nil, err
	}
	api := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "here are the items")
	}))
	return srv, api, nil
}
