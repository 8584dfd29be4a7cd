package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// stack builds the two routers of the nested tests, each serving
// /api/items under an outer limit of 3 a minute per address and an inner
// one of 10: chi's r.Route with r.Use, then r.With; and the standard
// library's two middlewares around the handler given to mux.Handle.
func stack(t *testing.T, clk limiter.Clock, opts ...middleware.Option) map[string]http.Handler {
	t.Helper()
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, middleware.WithHeaders(hw))
	mk := func() (outer, inner func(http.Handler) http.Handler) {
		return newMiddleware(t, newLimiter(t, clk, "outer", limiter.PerMinute(3)), opts...),
			newMiddleware(t, newLimiter(t, clk, "inner", limiter.PerMinute(10)), opts...)
	}
	var chiRouter http.Handler
	{
		outer, inner := mk()
		r := chi.NewRouter()
		r.Route("/api", func(r chi.Router) {
			r.Use(outer)
			r.With(inner).Get("/items", (&okHandler{}).ServeHTTP)
		})
		chiRouter = r
	}
	outer, inner := mk()
	mux := http.NewServeMux()
	mux.Handle("GET /api/items", outer(inner(&okHandler{})))
	return map[string]http.Handler{"chi": chiRouter, "stdlib": mux}
}

// TestStackedHeaders: nested middlewares report together. The outer
// limit of 3 is the tighter until it refuses; RateLimit-Policy names
// both policies on every decided answer, and RateLimit lists the windows
// of both, in the same order (issue 36: it listed the tighter alone).
func TestStackedHeaders(t *testing.T) {
	for name, h := range stack(t, newFakeClock(t0.Add(30*time.Second))) {
		t.Run(name, func(t *testing.T) {
			steps := []struct {
				name                 string
				status               int
				limit, remain, retry string
				rateLimit, policy    string
			}{
				{"1_outer_tighter", 200, "3", "2", "", `"outer";r=2;t=30, "inner";r=9;t=30`, `"outer";q=3;w=60, "inner";q=10;w=60`},
				{"2", 200, "3", "1", "", `"outer";r=1;t=30, "inner";r=8;t=30`, `"outer";q=3;w=60, "inner";q=10;w=60`},
				{"3", 200, "3", "0", "", `"outer";r=0;t=30, "inner";r=7;t=30`, `"outer";q=3;w=60, "inner";q=10;w=60`},
				// The outer refuses before the inner is reached: only its
				// policy applied.
				{"4_outer_refuses", 429, "3", "0", "30", `"outer";r=0;t=30`, `"outer";q=3;w=60`},
			}
			for _, s := range steps {
				r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
				r.RemoteAddr = "192.0.2.1:1"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != s.status {
					t.Fatalf("%s: status %d, want %d", s.name, w.Code, s.status)
				}
				wantHeaders(t, w, map[string]string{
					"X-RateLimit-Limit": s.limit, "X-RateLimit-Remaining": s.remain, "Retry-After": s.retry,
					"RateLimit": s.rateLimit, "RateLimit-Policy": s.policy,
				})
			}
		})
	}
}

// TestStackedInnerRefusal: an inner refusal is the most restrictive, and
// its 429 still names every policy that applied.
func TestStackedInnerRefusal(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	outer := newMiddleware(t, newLimiter(t, clk, "per-address", limiter.PerMinute(100)), middleware.WithHeaders(hw))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	inner := newMiddleware(t, newLimiter(t, clk, "per-user", limiter.PerMinute(1)), middleware.WithKey(user), middleware.WithHeaders(hw))
	r := chi.NewRouter()
	r.Use(outer)
	r.With(inner).Get("/login", (&okHandler{}).ServeHTTP)
	steps := []struct {
		name, remain, retry, rateLimit string
		status                         int
	}{
		{"first_inner_tighter", "0", "", `"per-address";r=99;t=30, "per-user";r=0;t=30`, 200},
		{"second_inner_refuses", "0", "30", `"per-address";r=98;t=30, "per-user";r=0;t=30`, 429},
	}
	for _, s := range steps {
		req := httptest.NewRequest(http.MethodGet, "/login", nil)
		req.RemoteAddr = "192.0.2.1:1"
		req.Header.Set("X-User", "ann")
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		if w.Code != s.status {
			t.Fatalf("%s: status %d, want %d", s.name, w.Code, s.status)
		}
		wantHeaders(t, w, map[string]string{
			"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": s.remain, "Retry-After": s.retry,
			"RateLimit": s.rateLimit, "RateLimit-Policy": `"per-address";q=100;w=60, "per-user";q=1;w=60`,
		})
	}
}

// TestWithLimiterListsEveryPolicy: the limiters of one middleware report
// together as stacked middlewares do.
func TestWithLimiterListsEveryPolicy(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	h := newMiddleware(t, newLimiter(t, clk, "per-ip", limiter.PerMinute(5)),
		middleware.WithLimiter(newLimiter(t, clk, "per-user", limiter.PerMinute(2), limiter.PerSecond(1)), user),
		middleware.WithHeaders(hw))(&okHandler{})
	w := call(h, "192.0.2.1:1", "X-User", "ann")
	wantHeaders(t, w, map[string]string{
		"RateLimit-Policy":  `"per-ip";q=5;w=60, "per-user-1m";q=2;w=60, "per-user-1s";q=1;w=1`,
		"RateLimit":         `"per-ip";r=4;t=30, "per-user-1m";r=1;t=30, "per-user-1s";r=0;t=1`,
		"X-RateLimit-Limit": "1",
	})
}

// TestStackedDecisionFrom: the handler behind nested middlewares sees the
// most restrictive decision, the one the headers describe.
func TestStackedDecisionFrom(t *testing.T) {
	clk := newFakeClock(t0)
	s := &seen{}
	outer := newMiddleware(t, newLimiter(t, clk, "outer", limiter.PerMinute(3)))
	inner := newMiddleware(t, newLimiter(t, clk, "inner", limiter.PerMinute(10)))
	call(outer(inner(s)), "192.0.2.1:1")
	if !s.ok || s.d.Policy.Name() != "outer" || s.d.Remaining != 2 {
		t.Fatalf("DecisionFrom = %+v, %v; want outer's, 2 remaining", s.d, s.ok)
	}
}
