// Command prometheus serves an API limited to 100 requests a minute per
// client through Redis, with the decisions and the Redis servers' health
// in Prometheus metrics on /metrics. It needs a Redis at 127.0.0.1:6379.
package main

import (
	"fmt"
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

func main() {
	reg := prometheus.NewRegistry() // or prometheus.DefaultRegisterer
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

	mux := http.NewServeMux() // not http.DefaultServeMux: Prometheus brings expvar's /debug/vars there
	mux.Handle("GET /api/items", api)
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", mux))
}
