package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// At most one export at once per API key, beside 100 requests a minute:
// a second export while the first runs is refused, and charged nothing.
func ExampleWithInFlight() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	rate, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer rate.Close()
	exports, err := limiter.NewInFlight("exports", 1, limiter.WithClock(clk)) // in memory; redisstore shares it
	if err != nil {
		log.Fatal(err)
	}
	defer exports.Close()
	apiKey, err := keyfunc.Header("X-API-Key")
	if err != nil {
		log.Fatal(err)
	}
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		log.Fatal(err)
	}
	mw, err := middleware.New(rate, middleware.WithKey(apiKey), middleware.WithInFlight(exports, nil), middleware.WithHeaders(hw))
	if err != nil {
		log.Fatal(err)
	}
	send := func(h http.Handler) {
		r := httptest.NewRequest(http.MethodPost, "/exports", nil)
		r.Header.Set("X-API-Key", "k-1")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Printf("%d RateLimit: %s | Retry-After: %q\n", w.Code, w.Header().Get("RateLimit"), w.Header().Get("Retry-After"))
	}
	fmt.Println("Policy:", exports.Policy())
	// The first export runs; while it does, a second one is sent.
	send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	})))
	send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))) // the first has ended
	// Output:
	// Policy: exports: 1 in flight
	// 429 RateLimit: "api";r=99;t=30, "exports";r=0 | Retry-After: "1"
	// 200 RateLimit: "api";r=99;t=30, "exports";r=0 | Retry-After: ""
	// 200 RateLimit: "api";r=98;t=30, "exports";r=0 | Retry-After: ""
}
