package keyfunc

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
)

// A layout builds a router with two routes under /api/v1, users/{id} and
// orders/{id}, and installs mw where a user of that router would.
type layout func(mw func(http.Handler) http.Handler) http.Handler

// apiRoutes registers the two routes on r, relative to /api/v1.
func apiRoutes(r chi.Router) {
	ok := func(http.ResponseWriter, *http.Request) {}
	r.Get("/users/{id}", ok)
	r.Post("/users/{id}", ok)
	r.Get("/orders/{id}", ok)
}

// chiLayouts are the places a chi user installs middleware.
var chiLayouts = []struct {
	name  string
	build layout
	// all: mw runs for every request, even one no route serves
	all bool
}{
	{"root_use", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Use(mw)
		r.Route("/api/v1", apiRoutes)
		return r
	}, true},
	{"use_inside_route", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Route("/api/v1", func(r chi.Router) {
			r.Use(mw)
			apiRoutes(r)
		})
		return r
	}, true},
	{"use_inside_nested_route_with_param", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Route("/{version:v[0-9]{1}}", func(r chi.Router) {})
		r.Route("/api", func(r chi.Router) {
			r.Route("/{version}", func(r chi.Router) {
				r.Use(mw)
				apiRoutes(r)
			})
		})
		return r
	}, true},
	{"group_around_route", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Group(func(r chi.Router) {
			r.Use(mw)
			r.Route("/api/v1", apiRoutes)
		})
		return r
	}, true},
	{"mount_of_a_sub_router", func(mw func(http.Handler) http.Handler) http.Handler {
		sub := chi.NewRouter()
		sub.Use(mw)
		apiRoutes(sub)
		r := chi.NewRouter()
		r.Mount("/api/v1", sub)
		return r
	}, true},
	{"with_on_each_route", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Route("/api/v1", func(r chi.Router) {
			apiRoutes(r.With(mw))
		})
		return r
	}, false},
	{"group_inside_route", func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Route("/api/v1", func(r chi.Router) {
			r.Group(func(r chi.Router) {
				r.Use(mw)
				apiRoutes(r)
			})
		})
		return r
	}, false},
}

// keyAt serves one request through the layout with f in mw and returns
// what f resolved ("" and nil when mw did not run).
func keyAt(t *testing.T, build layout, f Func, method, path string) (string, error) {
	t.Helper()
	var key string
	var err error
	h := build(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			key, err = f(r)
			next.ServeHTTP(w, r)
		})
	})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(method, path, nil))
	return key, err
}

// TestRouteKeyInEveryChiLayout: wherever chi's middleware sits, the key
// is the full pattern of the route that serves the request, never the
// wildcard of the mount above it, so two routes under one r.Route have
// two keys.
func TestRouteKeyInEveryChiLayout(t *testing.T) {
	rows := []struct {
		method, path string
		route        string // RoutePattern's key
		endpoint     string // Endpoint's key
		unmatched    bool   // no route serves it
	}{
		{"GET", "/api/v1/users/1", "route:/api/v1/users/{id}", "route:GET /api/v1/users/{id}", false},
		{"GET", "/api/v1/users/2", "route:/api/v1/users/{id}", "route:GET /api/v1/users/{id}", false},
		{"POST", "/api/v1/users/2", "route:/api/v1/users/{id}", "route:POST /api/v1/users/{id}", false},
		{"GET", "/api/v1/orders/7", "route:/api/v1/orders/{id}", "route:GET /api/v1/orders/{id}", false},
		{"GET", "/api/v1/nowhere", unmatchedRoute, unmatchedRoute, true},
		{"DELETE", "/api/v1/users/1", unmatchedRoute, unmatchedRoute, true}, // chi answers 405
	}
	for _, l := range chiLayouts {
		for _, row := range rows {
			if row.unmatched && !l.all {
				continue // mw never runs for it
			}
			path := row.path
			route, endpoint := row.route, row.endpoint
			if strings.Contains(l.name, "with_param") {
				path = strings.Replace(path, "/api/v1", "/api/v2", 1)
				route = strings.Replace(route, "/api/v1", "/api/{version}", 1)
				endpoint = strings.Replace(endpoint, "/api/v1", "/api/{version}", 1)
			}
			t.Run(l.name+"/"+row.method+path, func(t *testing.T) {
				for _, c := range []struct {
					fn   string
					f    Func
					want string
				}{{"RoutePattern", RoutePattern(), route}, {"Endpoint", Endpoint(), endpoint}} {
					key, err := keyAt(t, l.build, c.f, row.method, path)
					if err != nil || key != c.want {
						t.Fatalf("%s, %s %s: got key %q, error %v; want %q", c.fn, row.method, path, key, err, c.want)
					}
				}
			})
		}
	}
}

// TestRouteKeyMountedHandlerIsOneRoute: a handler mounted in chi that is
// not a chi router is one route to chi, keyed by the mount's pattern, as
// RoutePattern's doc says.
func TestRouteKeyMountedHandlerIsOneRoute(t *testing.T) {
	legacy := http.NewServeMux()
	legacy.HandleFunc("/legacy/a", func(http.ResponseWriter, *http.Request) {})
	build := func(mw func(http.Handler) http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Use(mw)
		r.Mount("/legacy", legacy)
		return r
	}
	for _, path := range []string{"/legacy/a", "/legacy/b"} {
		key, err := keyAt(t, build, RoutePattern(), "GET", path)
		if want := "route:/legacy/*"; err != nil || key != want {
			t.Fatalf("GET %s: got key %q, error %v; want %q", path, key, err, want)
		}
	}
}

// TestRouteKeyFollowsRootPathRewrite: a root middleware that rewrites the
// path chi routes by (StripSlashes sets RoutePath) is followed.
func TestRouteKeyFollowsRootPathRewrite(t *testing.T) {
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			chi.RouteContext(req.Context()).RoutePath = strings.TrimSuffix(req.URL.Path, "/")
			next.ServeHTTP(w, req)
		})
	})
	var key string
	var err error
	f := RoutePattern()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			key, err = f(req)
			next.ServeHTTP(w, req)
		})
	})
	r.Route("/api/v1", apiRoutes)
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/api/v1/users/1/", nil))
	if want := "route:/api/v1/users/{id}"; err != nil || key != want {
		t.Fatalf("GET /api/v1/users/1/ with the slash stripped for routing: got key %q, error %v; want %q", key, err, want)
	}
}

// TestRouteKeyAroundServeMux: around a ServeMux, ServeMuxPattern asks the
// mux; inside it, RoutePattern and Endpoint read r.Pattern.
func TestRouteKeyAroundServeMux(t *testing.T) {
	ok := func(http.ResponseWriter, *http.Request) {}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/users/{id}", ok)
	mux.HandleFunc("/api/v1/orders/{id}", ok) // any method
	around := must(t)(ServeMuxPattern(mux))
	inside := func(f Func) layout {
		return func(mw func(http.Handler) http.Handler) http.Handler {
			m := http.NewServeMux()
			m.Handle("GET /api/v1/users/{id}", mw(http.HandlerFunc(ok)))
			m.Handle("/api/v1/orders/{id}", mw(http.HandlerFunc(ok)))
			return m
		}
	}
	aroundLayout := func(mw func(http.Handler) http.Handler) http.Handler { return mw(mux) }
	tests := []struct {
		name         string
		build        layout
		f            Func
		method, path string
		want         string
	}{
		{"around_users_1", aroundLayout, around, "GET", "/api/v1/users/1", "route:GET /api/v1/users/{id}"},
		{"around_users_2", aroundLayout, around, "GET", "/api/v1/users/2", "route:GET /api/v1/users/{id}"},
		{"around_orders", aroundLayout, around, "GET", "/api/v1/orders/7", "route:/api/v1/orders/{id}"},
		{"around_unmatched", aroundLayout, around, "GET", "/nowhere", unmatchedRoute},
		{"around_method_not_allowed", aroundLayout, around, "DELETE", "/api/v1/users/1", unmatchedRoute},
		{"inside_route", inside(RoutePattern()), RoutePattern(), "GET", "/api/v1/users/1", "route:GET /api/v1/users/{id}"},
		{"inside_endpoint_method_in_pattern", inside(Endpoint()), Endpoint(), "GET", "/api/v1/users/1", "route:GET /api/v1/users/{id}"},
		{"inside_endpoint_any_method_pattern", inside(Endpoint()), Endpoint(), "PUT", "/api/v1/orders/7", "route:PUT /api/v1/orders/{id}"},
		{"inside_endpoint_invented_method", inside(Endpoint()), Endpoint(), "BREW", "/api/v1/orders/7", "route:* /api/v1/orders/{id}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := keyAt(t, tt.build, tt.f, tt.method, tt.path)
			if err != nil || key != tt.want {
				t.Fatalf("%s %s: got key %q, error %v; want %q", tt.method, tt.path, key, err, tt.want)
			}
		})
	}
	if _, err := ServeMuxPattern(nil); err == nil {
		t.Fatal("ServeMuxPattern(nil): nil error, want one wrapping ErrInvalidOption")
	}
}

// TestRouteKeyMisconfiguredLogsOnce: where no router can say, every
// request gets the error, and slog's default logger one line.
func TestRouteKeyMisconfiguredLogsOnce(t *testing.T) {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	f := RoutePattern()
	for range 3 {
		checkKey(t, f, request("203.0.113.7:1"), "")
	}
	if n := strings.Count(buf.String(), "\n"); n != 1 || !strings.Contains(buf.String(), "ServeMuxPattern") {
		t.Fatalf("log after 3 misconfigured requests: %d lines %q; want 1 naming ServeMuxPattern", n, buf.String())
	}
}
