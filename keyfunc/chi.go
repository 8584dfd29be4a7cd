package keyfunc

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5/middleware"
)

// ChiClientIP returns a Func that keys a request by the client address that
// one of chi's ClientIPFrom* middlewares (ClientIPFromRemoteAddr,
// ClientIPFromXFF, ClientIPFromHeader, ClientIPFromXFFTrustedProxies)
// stored in its context, read with middleware.GetClientIPAddr. Use it when
// the router already resolves the client with chi; the address is
// normalized and grouped like RemoteHost's, so the key is "203.0.113.7" or
// "ip6:.../64" (chi keeps the zone of a link-local RemoteAddr; it is
// dropped here).
//
// When no ClientIPFrom* middleware ran before the limiter, or it found no
// trustworthy address (chi fails closed on a malformed chain), the Func
// returns an error wrapping ErrNoKey.
func ChiClientIP(opts ...Option) (Func, error) {
	c, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		a := middleware.GetClientIPAddr(r.Context())
		if !a.IsValid() {
			return "", fmt.Errorf("%w: no chi client IP in the request context (install a middleware.ClientIPFrom* before the limiter)", ErrNoKey)
		}
		return c.addrKey(normalize(a)), nil
	}, nil
}
