package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
)

// ResolvedAddr returns a Func that keys a request by the client address
// that resolve reports for it, normalized and grouped like RemoteHost's
// ("203.0.113.7", "ip6:2001:db8:1:2::/64"; WithIPv4Prefix and
// WithIPv6Prefix apply). It lets another component that already resolves
// the client, such as a router's client-IP middleware, supply the address
// while the key keeps this package's form; package chikey builds chi's on
// it.
//
// When resolve returns an error, the Func returns an error wrapping both
// ErrNoKey and resolve's error; an invalid address with a nil error is an
// error wrapping ErrNoKey too. A nil resolve is a constructor error.
func ResolvedAddr(resolve func(*http.Request) (netip.Addr, error), opts ...Option) (Func, error) {
	if resolve == nil {
		return nil, fmt.Errorf("%w: ResolvedAddr: nil address resolver", ErrInvalidOption)
	}
	c, err := newConfig("ResolvedAddr", addrKind, opts)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		a, err := resolve(r)
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrNoKey, err)
		}
		if !a.IsValid() {
			return "", fmt.Errorf("%w: resolver found no client address", ErrNoKey)
		}
		return c.addrKey(normalize(a)), nil
	}, nil
}
