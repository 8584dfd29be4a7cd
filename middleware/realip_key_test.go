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

// TestRealIPInFrontClientsHaveOwnBudgets: chi's RealIP leaves the client's
// bare address in RemoteAddr; RemoteHost keys each client by it, so each
// has its own budget, and the one over it is refused alone.
func TestRealIPInFrontClientsHaveOwnBudgets(t *testing.T) {
	const limit = 2
	clk := newFakeClock(t0)
	r := chi.NewRouter()
	//lint:ignore SA1019 deprecated by chi, and still in front of the limiter in countless services
	r.Use(chimw.RealIP)
	r.Use(newMiddleware(t, newLimiter(t, clk, "realip", limiter.PerMinute(limit)), middleware.WithKey(keyfunc.Must(keyfunc.RemoteHost()))))
	r.Get("/x", (&okHandler{}).ServeHTTP)
	clients := []struct {
		name string
		hdr  []string
	}{
		{"xff_ipv4", []string{"X-Forwarded-For", "198.51.100.1, 10.0.0.1"}},
		{"xff_ipv6", []string{"X-Forwarded-For", "2001:db8:1::1"}},
		{"x_real_ip_ipv4", []string{"X-Real-IP", "198.51.100.2"}},
		{"x_real_ip_ipv6_other_64", []string{"X-Real-IP", "2001:db8:2::1"}},
	}
	send := func(hdr []string) int {
		req := httptest.NewRequest(http.MethodGet, "/x", nil)
		req.RemoteAddr = "10.0.0.1:40000" // the proxy, for every client
		req.Header.Set(hdr[0], hdr[1])
		w := httptest.NewRecorder()
		r.ServeHTTP(w, req)
		return w.Code
	}
	for _, c := range clients {
		for n := 1; n <= limit; n++ {
			if got := send(c.hdr); got != http.StatusOK {
				t.Fatalf("client %s, request %d of %d: got %d, want 200", c.name, n, limit, got)
			}
		}
		if got := send(c.hdr); got != http.StatusTooManyRequests {
			t.Fatalf("client %s, request %d over a limit of %d: got %d, want 429", c.name, limit+1, limit, got)
		}
	}
}
