package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"sync/atomic"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A reload builds the limiters and the middleware again over the store
// that keeps the usage, each limiter naming the one it replaces, swaps
// the handler, and closes the old limiters: a client that spent 2 of 3
// before the reload has 1 left of the new limit of 3.
func ExampleWithInFlight_reload() {
	store, err := limiter.NewMemoryStore() // or a *redisstore.Store
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	build := func(limit int64, old *limiter.Limiter, oldCap *limiter.InFlight) (*limiter.Limiter, *limiter.InFlight, http.Handler) {
		ropts := []limiter.Option{limiter.WithStore(store)}
		copts := []limiter.Option{limiter.WithStore(store)}
		if old != nil {
			ropts = append(ropts, limiter.WithReplace(old))
			copts = append(copts, limiter.WithReplace(oldCap))
		}
		rate, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(limit)), ropts...)
		if err != nil {
			log.Fatal(err)
		}
		capped, err := limiter.NewInFlight("exports", 5, copts...)
		if err != nil {
			log.Fatal(err)
		}
		mw, err := middleware.New(rate, middleware.WithInFlight(capped, nil))
		if err != nil {
			log.Fatal(err)
		}
		return rate, capped, mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	}
	var current atomic.Pointer[http.Handler]
	serve := func() string {
		w := httptest.NewRecorder()
		(*current.Load()).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return fmt.Sprint(w.Code, " remaining ", w.Header().Get("X-RateLimit-Remaining"))
	}

	rate, capped, h := build(10, nil, nil)
	current.Store(&h)
	fmt.Println(serve())
	fmt.Println(serve())

	// The reload: a limit of 3 now.
	newRate, newCap, newH := build(3, rate, capped)
	current.Store(&newH)
	// Once the requests that picked the old handler have ended:
	rate.Close()
	capped.Close()
	fmt.Println(serve())
	fmt.Println(serve())
	newRate.Close()
	newCap.Close()
	// Output:
	// 200 remaining 9
	// 200 remaining 8
	// 200 remaining 0
	// 429 remaining 0
}
