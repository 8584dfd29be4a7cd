package keyfunc

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"
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

func TestChiClientIP(t *testing.T) {
	f := must(t)(ChiClientIP())
	tests := []struct {
		name       string
		mw         func(http.Handler) http.Handler
		remoteAddr string
		hdr        []string
		want       string
	}{
		{"from_remote_addr", middleware.ClientIPFromRemoteAddr, "203.0.113.7:1", nil, "203.0.113.7"},
		{"from_remote_addr_ipv6_zone_dropped", middleware.ClientIPFromRemoteAddr, "[fe80::1%eth0]:1", nil, "ip6:fe80::/64"},
		{"from_xff_trusted", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, []string{"X-Forwarded-For", "198.51.100.9"}, "198.51.100.9"},
		{"from_xff_untrusted_peer", middleware.ClientIPFromXFF("10.0.0.0/8"), "203.0.113.7:1", []string{"X-Forwarded-For", "198.51.100.9"}, "203.0.113.7"},
		{"from_header_ipv6_grouped", middleware.ClientIPFromHeader("X-Real-IP", "10.0.0.0/8"), proxyPeer, []string{"X-Real-IP", "2001:db8:1:2::3"}, "ip6:2001:db8:1:2::/64"},
		{"xff_garbage_no_ip", middleware.ClientIPFromXFF("10.0.0.0/8"), proxyPeer, []string{"X-Forwarded-For", "garbage"}, ""},
		{"no_chi_middleware", func(h http.Handler) http.Handler { return h }, "203.0.113.7:1", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := request(tt.remoteAddr, tt.hdr...)
			key, err := serveKey(t, tt.mw, f, r)
			checkKey(t, func(*http.Request) (string, error) { return key, err }, r, tt.want)
		})
	}
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

// TestRoutePatternBeforeRouting shows why the limiter must not sit in
// chi's root r.Use: there the pattern is still empty, and RoutePattern
// reports it instead of keying every route alike.
func TestRoutePatternBeforeRouting(t *testing.T) {
	f := RoutePattern()
	var err error
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			_, err = f(req)
			next.ServeHTTP(w, req)
		})
	})
	r.Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
	r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/users/1", nil))
	checkKey(t, func(*http.Request) (string, error) { return "", err }, nil, "")
}
