package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestMain fails the package if a goroutine (a test server, a client
// connection, a store's sweep) outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

type call struct {
	method, path string
	hdr, form    string // an X-API-Key header; a password form value
	wantCode     int
	wantLimit    string
}

func TestRoutes(t *testing.T) {
	tests := []struct {
		name  string
		calls []call
	}{
		{"group_shares_one_budget_over_its_routes", append(
			repeat(call{"GET", "/items", "", "", 200, "10"}, 5),
			append(repeat(call{"GET", "/items/7", "", "", 200, "10"}, 5),
				call{"GET", "/items", "", "", 429, "10"}, call{"GET", "/items/8", "", "", 429, "10"})...)},
		{"login_counts_failures_only", append(append(
			repeat(call{"POST", "/login", "", "open sesame", 200, "3"}, 5),
			repeat(call{"POST", "/login", "", "guess", 401, "3"}, 3)...),
			call{"POST", "/login", "", "open sesame", 429, "3"}, call{"GET", "/healthz", "", "", 200, ""})},
		{"api_key_then_address_each_its_own_budget", append(append(
			repeat(call{"GET", "/api/quota", "k-1", "", 200, "100"}, 100),
			call{"GET", "/api/quota", "k-1", "", 429, "100"},
			call{"GET", "/api/quota", "k-2", "", 200, "100"}),
			call{"GET", "/api/quota", "", "", 200, "100"})},
		{"route_pattern_key_one_budget_for_every_id", []call{
			{"GET", "/users/1", "", "", 200, "5"}, {"GET", "/users/2", "", "", 200, "5"}, {"GET", "/users/3", "", "", 200, "5"},
			{"GET", "/users/1", "", "", 200, "5"}, {"GET", "/users/42", "", "", 200, "5"}, {"GET", "/users/5", "", "", 429, "5"},
		}},
		{"healthz_never_limited", repeat(call{"GET", "/healthz", "", "", 200, ""}, 20)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			for i, c := range tt.calls {
				res := do(t, c, srv.URL)
				if res.StatusCode != c.wantCode || res.Header.Get("X-RateLimit-Limit") != c.wantLimit {
					t.Fatalf("%s %s (call %d): %d with X-RateLimit-Limit %q, want %d and %q",
						c.method, c.path, i+1, res.StatusCode, res.Header.Get("X-RateLimit-Limit"), c.wantCode, c.wantLimit)
				}
			}
		})
	}
}

// TestQuotaBody: the handler reads the decision its headers describe.
func TestQuotaBody(t *testing.T) {
	srv := newServer(t)
	for i := 1; i <= 3; i++ {
		res := do(t, call{method: "GET", path: "/api/quota", hdr: "k-9"}, srv.URL)
		var got map[string]int64
		if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
			t.Fatal(err)
		}
		want := map[string]int64{"limit": 100, "remaining": 100 - int64(i), "reset": start.Truncate(time.Minute).Add(time.Minute).Unix()}
		if !maps.Equal(got, want) {
			t.Fatalf("request %d: body %v, want %v", i, got, want)
		}
		if h := res.Header.Get("X-RateLimit-Remaining"); h != strconv.FormatInt(want["remaining"], 10) {
			t.Fatalf("request %d: X-RateLimit-Remaining %q, body says %d", i, h, want["remaining"])
		}
	}
}

var start = time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)

// newServer serves a fresh router, with fresh counters, on a fake clock.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(newRouter(limiter.WithClock(limitertest.New(start))))
	t.Cleanup(srv.Close)
	return srv
}

// do sends c to the server at base and returns the response, its body
// read into memory.
func do(t *testing.T, c call, base string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if c.form != "" {
		body = strings.NewReader(url.Values{"password": {c.form}}.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if c.hdr != "" {
		req.Header.Set("X-API-Key", c.hdr)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	res.Body = io.NopCloser(bytes.NewReader(b))
	return res
}

func repeat(c call, n int) []call {
	out := make([]call, n)
	for i := range out {
		out[i] = c
	}
	return out
}

// Installed with r.Use on the root router, a route-pattern key runs before
// chi has matched the route and still keys by the route chi will serve:
// two routes have a budget each, and the ids of one route share it.
func TestRoutePatternOnTheRootRouter(t *testing.T) {
	mw := middleware.MustNew(limiter.MustNew(limiter.MustPolicy("root-use", limiter.PerMinute(1)),
		limiter.WithClock(limitertest.New(start))), middleware.WithKey(keyfunc.RoutePattern()))
	r := chi.NewRouter()
	r.Use(mw)
	r.Route("/api", func(r chi.Router) {
		r.Get("/users/{id}", text("user"))
		r.Get("/items/{id}", text("item"))
	})
	srv := httptest.NewServer(r)
	defer srv.Close()
	for _, c := range []struct {
		path string
		want int
	}{
		{"/api/users/1", http.StatusOK},
		{"/api/users/2", http.StatusTooManyRequests},
		{"/api/items/1", http.StatusOK},
	} {
		res := do(t, call{method: "GET", path: c.path}, srv.URL)
		if res.StatusCode != c.want {
			t.Fatalf("GET %s: status = %d, want %d", c.path, res.StatusCode, c.want)
		}
	}
}
