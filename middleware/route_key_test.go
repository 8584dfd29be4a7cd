package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestRouteKeyBudgetsInEveryLayout: two routes under one r.Route have a
// budget each wherever the limiter sits in chi, and around a ServeMux with
// keyfunc.ServeMuxPattern; around a ServeMux, keyfunc.RoutePattern cannot
// know the route and answers 500, reported as Misconfigured, never one
// budget for the subtree.
func TestRouteKeyBudgetsInEveryLayout(t *testing.T) {
	ok := (&okHandler{}).ServeHTTP
	routes := func(r chi.Router) {
		r.Get("/users/{id}", ok)
		r.Get("/orders/{id}", ok)
	}
	muxWith := func(wrap func(http.Handler) http.Handler) *http.ServeMux {
		m := http.NewServeMux()
		m.Handle("GET /api/v1/users/{id}", wrap(http.HandlerFunc(ok)))
		m.Handle("GET /api/v1/orders/{id}", wrap(http.HandlerFunc(ok)))
		return m
	}
	bare := muxWith(func(h http.Handler) http.Handler { return h })
	tests := []struct {
		name  string
		key   keyfunc.Func
		build func(mw func(http.Handler) http.Handler) http.Handler
		// misconfigured: every request 500 and Misconfigured
		misconfigured bool
	}{
		{"chi_root_use", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(mw)
			r.Route("/api/v1", routes)
			return r
		}, false},
		// StripSlashes rewrites the path chi routes by: the trailing
		// slashes below are routed, and keyed, without it.
		{"chi_root_use_after_strip_slashes", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(chimw.StripSlashes, mw)
			r.Route("/api/v1", routes)
			return r
		}, false},
		{"chi_use_inside_route", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Route("/api/v1", func(r chi.Router) {
				r.Use(mw)
				routes(r)
			})
			return r
		}, false},
		{"chi_group_around_route", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Group(func(r chi.Router) {
				r.Use(mw)
				r.Route("/api/v1", routes)
			})
			return r
		}, false},
		{"chi_mount_of_sub_router", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			sub := chi.NewRouter()
			sub.Use(mw)
			routes(sub)
			r := chi.NewRouter()
			r.Mount("/api/v1", sub)
			return r
		}, false},
		{"chi_with", keyfunc.Endpoint(), func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Route("/api/v1", func(r chi.Router) { routes(r.With(mw)) })
			return r
		}, false},
		{"inside_servemux", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			return muxWith(mw)
		}, false},
		{"around_servemux_asking_it", keyfunc.Must(keyfunc.ServeMuxPattern(bare)), func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(bare)
		}, false},
		{"around_servemux_unknowable", keyfunc.RoutePattern(), func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(bare)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			h := tt.build(newMiddleware(t, newLimiter(t, newFakeClock(t0), "route-"+tt.name, limiter.PerMinute(1)),
				middleware.WithKey(tt.key), middleware.WithObserver(rec.observe)))
			get := func(path string) int {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
				return w.Code
			}
			want := []int{http.StatusOK, http.StatusTooManyRequests, http.StatusOK}
			if tt.misconfigured {
				want = []int{http.StatusInternalServerError, http.StatusInternalServerError, http.StatusInternalServerError}
			}
			paths := []string{"/api/v1/users/1", "/api/v1/users/2", "/api/v1/orders/7"}
			if tt.name == "chi_root_use_after_strip_slashes" {
				paths = []string{"/api/v1/users/1/", "/api/v1/users/2", "/api/v1/orders/7/"}
			}
			for i, path := range paths {
				if got := get(path); got != want[i] {
					t.Fatalf("GET %s (request %d, limit 1 per route): got %d, want %d", path, i+1, got, want[i])
				}
			}
			if tt.misconfigured {
				if out := rec.outcomes(); len(out) == 0 || out[0] != middleware.Misconfigured {
					t.Fatalf("outcomes %v; want Misconfigured first", out)
				}
			}
		})
	}
}
