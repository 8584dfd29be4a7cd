package migrating

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// clientIP is the resolver many services have: X-Real-IP, else the
// leftmost X-Forwarded-For, else the peer. The leftmost address is the
// one the client wrote: each proxy appends the peer it saw.
func clientIP(r *http.Request) (netip.Addr, error) {
	if v := r.Header.Get("X-Real-IP"); v != "" {
		return netip.ParseAddr(strings.TrimSpace(v))
	}
	if v := r.Header.Get("X-Forwarded-For"); v != "" {
		first, _, _ := strings.Cut(v, ",")
		return netip.ParseAddr(strings.TrimSpace(first))
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	return ap.Addr(), err
}

// Example_forwardedFor: behind a proxy at 10.0.0.1 that appends the
// client's address to X-Forwarded-For, a client at 203.0.113.7 writes a
// new address of its choosing to the left on every request. Read from
// the left (the service's clientIP, or ulule's TrustForwardHeader), each
// request is a new client with a fresh budget; keyfunc.TrustedProxy
// walks from the right, past the trusted proxies, to the address the
// proxy itself saw. keyfunc.ResolvedAddr keeps a service's own resolver
// (the same keys as before the migration, and the same weakness);
// behind a proxy that overwrites X-Real-IP, TrustedProxy(keyfunc.XRealIP,
// ...) reads that one header instead.
func Example_forwardedFor() {
	proxies := []string{"10.0.0.0/8"}
	fromRight := keyfunc.Must(keyfunc.TrustedProxy(keyfunc.XForwardedFor, proxies))
	own := keyfunc.Must(keyfunc.ResolvedAddr(clientIP))
	realIP := keyfunc.Must(keyfunc.TrustedProxy(keyfunc.XRealIP, proxies))

	forged := func(i int) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		r.RemoteAddr = "10.0.0.1:4711" // the proxy
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.100.%d, 203.0.113.7", i))
		return r
	}
	k1, _ := fromRight(forged(1))
	k2, _ := own(forged(1))
	fmt.Println("X-Forwarded-For: 198.51.100.1, 203.0.113.7 from the proxy")
	fmt.Println("  TrustedProxy:", k1)
	fmt.Println("  ResolvedAddr(clientIP):", k2)

	direct := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	direct.RemoteAddr = "203.0.113.7:4711" // no proxy in between
	direct.Header.Set("X-Real-IP", "198.51.100.1")
	k3, _ := realIP(direct)
	k4, _ := own(direct)
	fmt.Println("X-Real-IP: 198.51.100.1 straight from 203.0.113.7")
	fmt.Println("  TrustedProxy(XRealIP):", k3)
	fmt.Println("  ResolvedAddr(clientIP):", k4)

	// Four requests a client forged, under a limit of 3 an hour.
	for _, side := range []struct {
		name string
		key  keyfunc.Func
	}{{"from the left", own}, {"from the right", fromRight}} {
		l := limiter.MustNew(limiter.MustPolicy("api", limiter.PerHour(3)), limiter.WithClock(limitertest.New(noon30)))
		h := middleware.MustNew(l, middleware.WithKey(side.key))(ok)
		var got []string
		for i := range 4 {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, forged(i))
			got = append(got, fmt.Sprint(w.Code))
		}
		fmt.Println(side.name+":", strings.Join(got, " "))
		l.Close()
	}
	// Output:
	// X-Forwarded-For: 198.51.100.1, 203.0.113.7 from the proxy
	//   TrustedProxy: 203.0.113.7
	//   ResolvedAddr(clientIP): 198.51.100.1
	// X-Real-IP: 198.51.100.1 straight from 203.0.113.7
	//   TrustedProxy(XRealIP): 203.0.113.7
	//   ResolvedAddr(clientIP): 198.51.100.1
	// from the left: 200 200 200 200
	// from the right: 200 200 200 429
}
