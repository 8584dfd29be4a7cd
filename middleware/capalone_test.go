package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// holdingHandler runs each request until release is closed, telling
// entered once it is inside.
func holdingHandler(release <-chan struct{}, entered chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	})
}

// getFrom serves one GET of path from the client address and returns it.
func getFrom(h http.Handler, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestInFlightAloneOnARoute: a cap alone on a route, in one line, no
// rate: one export at once per address, a second refused with Remaining
// 0 and the cap's Retry-After, and the draft fields list the cap.
func TestInFlightAloneOnARoute(t *testing.T) {
	f := limiter.MustInFlight("exports", 1)
	t.Cleanup(func() { f.Close() })
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	mux := http.NewServeMux()
	mux.Handle("GET /export", middleware.MustInFlight(f, middleware.WithHeaders(hw))(holdingHandler(release, entered)))
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- getFrom(mux, "/export") }()
	<-entered
	w := getFrom(mux, "/export")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Remaining") != "0" || w.Header().Get("Retry-After") != "1" {
		t.Fatalf("a second export at once: %d %v; want 429, Remaining 0, Retry-After 1", w.Code, w.Header())
	}
	close(release)
	if w := <-first; w.Code != http.StatusOK || w.Header().Get("RateLimit") != `"exports";r=0` ||
		w.Header().Get("RateLimit-Policy") != `"exports";q=1;qu="concurrent-requests"` || w.Header().Get("X-RateLimit-Limit") != "" {
		t.Fatalf("the first export: %d %v; want 200 with the cap in the draft fields, no X-RateLimit-*", w.Code, w.Header())
	}
	if u, _ := f.Usage(context.Background(), "192.0.2.1"); u.Held != 0 {
		t.Fatalf("after the exports: %d held", u.Held)
	}
	for _, opt := range []middleware.Option{
		middleware.WithLimiter(newLimiter(t, newFakeClock(t0), "x", limiter.PerMinute(1)), nil),
		middleware.WithCost(func(*http.Request) int64 { return 2 }),
		middleware.WithCountIf(func(int) bool { return true }),
	} {
		if _, err := middleware.InFlight(f, opt); !errors.Is(err, middleware.ErrInvalidOption) {
			t.Errorf("InFlight with an option of rates: %v, want ErrInvalidOption", err)
		}
	}
	if _, err := middleware.InFlight(nil); !errors.Is(err, middleware.ErrInvalidOption) {
		t.Errorf("InFlight(nil): %v, want ErrInvalidOption", err)
	}
}

// TestInFlightUnderAGroupRate: a chi group limited by a rate, one route
// of it capped in one line: every request is charged to the group's rate
// once, the capped route's headers carry the rate and the cap, and the
// cap refuses a second export while one runs.
func TestInFlightUnderAGroupRate(t *testing.T) {
	clk := newFakeClock(t0)
	rate := newLimiter(t, clk, "group", limiter.PerMinute(100))
	f := limiter.MustInFlight("exports", 1)
	t.Cleanup(func() { f.Close() })
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	r := chi.NewRouter()
	r.Group(func(r chi.Router) {
		r.Use(middleware.MustNew(rate, middleware.WithHeaders(hw)))
		r.Get("/items", (&okHandler{}).ServeHTTP)
		r.With(middleware.MustInFlight(f, middleware.WithHeaders(hw))).Get("/export", holdingHandler(release, entered).ServeHTTP)
	})
	if w := getFrom(r, "/items"); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "99" {
		t.Fatalf("/items: %d %v", w.Code, w.Header())
	}
	first := make(chan *httptest.ResponseRecorder, 1)
	go func() { first <- getFrom(r, "/export") }()
	<-entered
	if w := getFrom(r, "/export"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a second export at once: %d, want 429", w.Code)
	}
	close(release)
	w := <-first
	if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "98" ||
		w.Header().Get("RateLimit") != `"group";r=98;t=60, "exports";r=0` {
		t.Fatalf("the first export: %d %v; want the group's 98 left and the cap in RateLimit", w.Code, w.Header())
	}
	// Three requests reached the group: each charged once.
	if d, _ := rate.Peek(context.Background(), "192.0.2.1", 1); d.Remaining != 100-3-1 {
		t.Fatalf("the group's rate: %d remaining after 3 requests, want %d: charged once each", d.Remaining, 100-3-1)
	}
}
