package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/goleak"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestMain fails the package if a goroutine (a test server, a client
// connection, a store's sweep) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type call struct {
	method, path string
	wantCode     int
	wantLimit    string
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name  string
		calls []call
	}{
		{"group_shares_one_budget_over_its_routes", append(
			repeat(call{"GET", "/api/items", 200, "10"}, 5),
			append(repeat(call{"GET", "/api/items/7", 200, "10"}, 5),
				call{"GET", "/api/items", 429, "10"}, call{"GET", "/api/items/8", 429, "10"})...)},
		{"with_limits_login_alone", append(
			repeat(call{"POST", "/api/login", 200, "3"}, 3),
			call{"POST", "/api/login", 429, "3"}, call{"GET", "/healthz", 200, ""})},
		{"route_pattern_key_one_budget_for_every_id", []call{
			{"GET", "/api/users/1", 200, "5"}, {"GET", "/api/users/2", 200, "5"}, {"GET", "/api/users/3", 200, "5"},
			{"GET", "/api/users/1", 200, "5"}, {"GET", "/api/users/42", 200, "5"}, {"GET", "/api/users/5", 429, "5"},
		}},
		{"healthz_never_limited", repeat(call{"GET", "/healthz", 200, ""}, 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			for i, c := range tt.calls {
				code, limit := do(t, c.method, srv.URL+c.path)
				if code != c.wantCode || limit != c.wantLimit {
					t.Fatalf("%s %s (call %d): %d with X-RateLimit-Limit %q, want %d and %q",
						c.method, c.path, i+1, code, limit, c.wantCode, c.wantLimit)
				}
			}
		})
	}
}

// newServer serves a fresh router, with fresh counters, on a fake clock.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	store, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	r, err := newRouter(limiter.WithStore(store), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, method, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header.Get("X-RateLimit-Limit")
}

func repeat(c call, n int) []call {
	out := make([]call, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// Installed with r.Use on the root router, a route-pattern key runs before
// chi has matched the route: every request is refused, the server's
// mistake (keyfunc.ErrMisconfigured, 500), rather than pooled into one
// bucket shared by all routes.
func TestRoutePatternBeforeRoutingIsMisconfigured(t *testing.T) {
	store, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	route, err := keyfunc.RoutePattern()
	if err != nil {
		t.Fatal(err)
	}
	mw, err := limit([]limiter.Option{limiter.WithStore(store), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)))},
		limiter.MustPolicy("misplaced", limiter.PerMinute(5)), middleware.WithKey(route))
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	r.Use(mw)
	r.Get("/api/users/{id}", reply("user"))
	srv := httptest.NewServer(r)
	defer srv.Close()
	if code, _ := do(t, "GET", srv.URL+"/api/users/1"); code != http.StatusInternalServerError {
		t.Fatalf("status = %d, want 500", code)
	}
}
