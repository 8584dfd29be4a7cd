package chikey

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

var (
	// errNoClientIPMiddleware says what to fix when no ClientIPFrom*
	// middleware can have run: the server's mistake.
	errNoClientIPMiddleware = fmt.Errorf("%w: no chi client IP in the request context (install a middleware.ClientIPFrom* before the limiter; behind a trusted proxy, have it send the forwarding header)", keyfunc.ErrMisconfigured)
	// errNoTrustworthyIP is chi failing closed on what the request
	// carried: the client cannot be identified.
	errNoTrustworthyIP = errors.New("chikey: chi's ClientIPFrom* middleware found no trustworthy client IP (a malformed X-Forwarded-For or RemoteAddr)")
)

// ClientIP returns a keyfunc.Func that keys a request by the client address
// that one of chi's ClientIPFrom* middlewares (ClientIPFromRemoteAddr,
// ClientIPFromXFF, ClientIPFromHeader, ClientIPFromXFFTrustedProxies)
// stored in its context, read with middleware.GetClientIPAddr. Use it when
// the router already resolves the client with chi; the address is
// normalized and grouped like keyfunc.RemoteHost's, so the key is
// "203.0.113.7" or "ip6:.../64" (chi keeps the zone of a link-local
// RemoteAddr; it is dropped here). The options are keyfunc's
// WithIPv4Prefix and WithIPv6Prefix; the others do not concern addresses
// and are errors.
//
// When no address was stored, the Func returns an error wrapping
// keyfunc.ErrNoKey. chi stores nothing both when no ClientIPFrom*
// middleware ran and when it found no trustworthy address, so the Func
// tells them apart by the request: with an X-Forwarded-For header or a
// RemoteAddr that is neither an IP and port nor a bare IP (which chi's
// RealIP leaves and ClientIPFromRemoteAddr reads), chi may have refused what the client
// sent (fail-closed on a malformed chain), and the client cannot be
// identified (400). Otherwise every ClientIPFrom* middleware would have
// stored an address, unless a trusted proxy left out the header it is
// told to send; the error then wraps keyfunc.ErrMisconfigured too, and
// the middleware answers 500: the server is set up wrong.
func ClientIP(opts ...keyfunc.Option) (keyfunc.Func, error) {
	f, err := keyfunc.ResolvedAddr(func(r *http.Request) (netip.Addr, error) {
		a := middleware.GetClientIPAddr(r.Context())
		if a.IsValid() {
			return a, nil
		}
		if _, forwarded := r.Header["X-Forwarded-For"]; forwarded {
			return netip.Addr{}, errNoTrustworthyIP
		}
		if !peerIP(r.RemoteAddr) {
			return netip.Addr{}, errNoTrustworthyIP
		}
		return netip.Addr{}, errNoClientIPMiddleware
	}, opts...)
	if err != nil {
		return nil, fmt.Errorf("chikey: ClientIP: %w", err)
	}
	return f, nil
}

// peerIP reports whether remoteAddr is an address chi's ClientIPFrom*
// middlewares read, as they read it: an IP and port, or a bare IP (what
// chi's RealIP leaves).
func peerIP(remoteAddr string) bool {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	_, err = netip.ParseAddr(host)
	return err == nil
}
