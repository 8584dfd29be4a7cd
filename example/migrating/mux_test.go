package migrating

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestMuxRouterUseRewrapsPerRequest: gorilla/mux's Router.Use applies
// each middleware to the matched route's handler on every request. A
// middleware built once (its limiter and counters with it) and applied
// per request still holds its limit: the wrapping is new each time, the
// counters are not.
func TestMuxRouterUseRewrapsPerRequest(t *testing.T) {
	clk := limitertest.New(noon30)
	limit := middleware.ByIP(3, time.Hour, limiter.WithClock(clk)) // once
	wraps := 0
	r := mux.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		wraps++
		return limit(next)
	})
	r.Handle("/api/items", ok)

	if got, want := codes(ask(r, "192.0.2.1", 4)), "200 200 200 429"; got != want {
		t.Fatalf("4 requests under 3 an hour through Router.Use: got %s, want %s", got, want)
	}
	if wraps != 4 {
		t.Fatalf("the router applied the middleware %d times for 4 requests, want 4 (once per request)", wraps)
	}
	if got, want := codes(ask(r, "192.0.2.2", 1)), "200"; got != want {
		t.Fatalf("another client: got %s, want %s", got, want)
	}
	clk.Advance(time.Hour)
	if got, want := codes(ask(r, "192.0.2.1", 1)), "200"; got != want {
		t.Fatalf("the next hour: got %s, want %s", got, want)
	}
}

// TestMuxLimiterBuiltPerRequestNeverRefuses is the mistake: a middleware
// built inside the function Router.Use calls is a new limiter, with new
// counters, on every request, so no client is ever refused.
func TestMuxLimiterBuiltPerRequestNeverRefuses(t *testing.T) {
	clk := limitertest.New(noon30)
	r := mux.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return middleware.ByIP(3, time.Hour, limiter.WithClock(clk))(next) // per request: wrong
	})
	r.Handle("/api/items", ok)
	if got, want := codes(ask(r, "192.0.2.1", 10)), "200 200 200 200 200 200 200 200 200 200"; got != want {
		t.Fatalf("10 requests, a limiter built per request: got %s, want %s (never refused)", got, want)
	}
}

// Example_gorillaMux: build the middleware once, outside the function
// the router calls, and hand the router the built function.
func Example_gorillaMux() {
	clk := limitertest.New(noon30)
	limit := middleware.ByIP(3, time.Hour, limiter.WithClock(clk)) // built once

	r := mux.NewRouter()
	r.Use(limit) // applied by the router on every request: the counters are limit's
	r.Handle("/api/items", ok)
	fmt.Println("built once:", codes(ask(r, "192.0.2.1", 4)))

	wrong := mux.NewRouter()
	wrong.Use(func(next http.Handler) http.Handler {
		return middleware.ByIP(3, time.Hour, limiter.WithClock(clk))(next) // a new limiter per request
	})
	wrong.Handle("/api/items", ok)
	fmt.Println("built per request:", codes(ask(wrong, "192.0.2.1", 4)))
	// Output:
	// built once: 200 200 200 429
	// built per request: 200 200 200 200
}
