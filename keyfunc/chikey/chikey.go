package chikey

import (
	"errors"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

// errNoChiIP says what to fix when no ClientIPFrom* middleware stored an
// address.
var errNoChiIP = errors.New("no chi client IP in the request context (install a middleware.ClientIPFrom* before the limiter)")

// ClientIP returns a keyfunc.Func that keys a request by the client address
// that one of chi's ClientIPFrom* middlewares (ClientIPFromRemoteAddr,
// ClientIPFromXFF, ClientIPFromHeader, ClientIPFromXFFTrustedProxies)
// stored in its context, read with middleware.GetClientIPAddr. Use it when
// the router already resolves the client with chi; the address is
// normalized and grouped like keyfunc.RemoteHost's, so the key is
// "203.0.113.7" or "ip6:.../64" (chi keeps the zone of a link-local
// RemoteAddr; it is dropped here). The options are keyfunc's
// WithIPv4Prefix and WithIPv6Prefix.
//
// When no ClientIPFrom* middleware ran before the limiter, or it found no
// trustworthy address (chi fails closed on a malformed chain), the Func
// returns an error wrapping keyfunc.ErrNoKey.
func ClientIP(opts ...keyfunc.Option) (keyfunc.Func, error) {
	return keyfunc.ResolvedAddr(func(r *http.Request) (netip.Addr, error) {
		a := middleware.GetClientIPAddr(r.Context())
		if !a.IsValid() {
			return netip.Addr{}, errNoChiIP
		}
		return a, nil
	}, opts...)
}
