package keyfunc

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
)

// serveKey routes r through h (a chi router or ServeMux) to a handler
// that records the key f resolves there.
func serveKey(t *testing.T, mount func(http.Handler) http.Handler, f Func, r *http.Request) (string, error) {
	t.Helper()
	var key string
	var err error
	h := mount(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err = f(r)
	}))
	h.ServeHTTP(httptest.NewRecorder(), r)
	return key, err
}

func TestRoutePattern(t *testing.T) {
	f := RoutePattern()
	chiRouter := func(h http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Route("/api", func(r chi.Router) {
			r.Get("/users/{id}", h.ServeHTTP)
		})
		return r
	}
	mux := func(h http.Handler) http.Handler {
		m := http.NewServeMux()
		m.Handle("GET /users/{id}", h)
		return m
	}
	tests := []struct {
		name  string
		mount func(http.Handler) http.Handler
		path  string
		want  string
	}{
		{"chi_id_1", chiRouter, "/api/users/1", "route:/api/users/{id}"},
		{"chi_id_2_same_bucket", chiRouter, "/api/users/2", "route:/api/users/{id}"},
		{"servemux_id_1", mux, "/users/1", "route:GET /users/{id}"},
		{"servemux_id_2_same_bucket", mux, "/users/2", "route:GET /users/{id}"},
		{"no_router", func(h http.Handler) http.Handler { return h }, "/users/1", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			key, err := serveKey(t, tt.mount, f, r)
			checkKey(t, func(*http.Request) (string, error) { return key, err }, r, tt.want)
		})
	}
}

// TestRoutePatternBeforeRouting: in chi's root r.Use the route has not
// matched yet, and the key is still the pattern of the route chi will
// serve.
func TestRoutePatternBeforeRouting(t *testing.T) {
	f := RoutePattern()
	var key string
	var err error
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			key, err = f(req)
			next.ServeHTTP(w, req)
		})
	})
	r.Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/users/1", nil))
	checkKey(t, func(*http.Request) (string, error) { return key, err }, nil, "route:/users/{id}")
}

// TestRoutePatternMisconfigured: where no router can say which route
// serves the request, that is the server's mistake, reported as
// ErrMisconfigured (and ErrNoKey), so that the middleware can answer 500
// rather than blame the client.
func TestRoutePatternMisconfigured(t *testing.T) {
	f := RoutePattern()
	chiRoot := func(h http.Handler) http.Handler {
		r := chi.NewRouter()
		r.Use(func(next http.Handler) http.Handler { return h }) // before routing
		r.Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
		return r
	}
	chiRoute := func(h http.Handler) http.Handler {
		r := chi.NewRouter()
		r.With(func(http.Handler) http.Handler { return h }).Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
		return r
	}
	aroundMux := func(h http.Handler) http.Handler {
		m := http.NewServeMux()
		m.HandleFunc("GET /users/{id}", func(http.ResponseWriter, *http.Request) {})
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(w, r) // the limiter, before the mux
			m.ServeHTTP(w, r)
		})
	}
	tests := []struct {
		name             string
		mount            func(http.Handler) http.Handler
		wantMisconfigure bool
	}{
		{"chi_root_use", chiRoot, false},
		{"no_router", func(h http.Handler) http.Handler { return h }, true},
		{"around_a_servemux", aroundMux, true},
		{"chi_with_on_the_route", chiRoute, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := serveKey(t, tt.mount, f, httptest.NewRequest(http.MethodGet, "/users/1", nil))
			if got := errors.Is(err, ErrMisconfigured); got != tt.wantMisconfigure {
				t.Fatalf("error %v: wraps ErrMisconfigured %v, want %v", err, got, tt.wantMisconfigure)
			}
			if tt.wantMisconfigure && !errors.Is(err, ErrNoKey) {
				t.Fatalf("error %v does not wrap ErrNoKey", err)
			}
		})
	}
}

// A misconfigured alternative stops First and Join: falling back to the
// next key on every request would hide the mistake. An alternative that
// resolves before it is never asked.
func TestMisconfiguredStopsFirstAndJoin(t *testing.T) {
	host := must(t)(RemoteHost())
	tests := []struct {
		name    string
		f       Func
		wantKey string // "" means an error wrapping ErrMisconfigured
	}{
		{"first_route_then_host", must(t)(First(RoutePattern(), host)), ""},
		{"first_host_then_route_resolves", must(t)(First(host, RoutePattern())), "203.0.113.7"},
		{"join_host_route", must(t)(Join(host, RoutePattern())), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, err := tt.f(request("203.0.113.7:1"))
			if tt.wantKey != "" {
				if err != nil || k != tt.wantKey {
					t.Fatalf("got key %q, error %v; want %q", k, err, tt.wantKey)
				}
				return
			}
			if !errors.Is(err, ErrMisconfigured) || k != "" {
				t.Fatalf("got key %q, error %v; want no key and an error wrapping ErrMisconfigured", k, err)
			}
		})
	}
}
