package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
)

// realIPClient reads X-Real-IP. If the header is repeated, the last value
// is the one added nearest this server, so it wins.
func realIPClient(h http.Header, _ []netip.Prefix) (netip.Addr, error) {
	vs := h["X-Real-Ip"]
	if len(vs) == 0 {
		return netip.Addr{}, fmt.Errorf("%w: trusted proxy sent no X-Real-IP", ErrNoKey)
	}
	v := vs[len(vs)-1]
	a, ok := parseHop(v, false)
	if !ok {
		return netip.Addr{}, fmt.Errorf("%w: X-Real-IP %q is not an address", ErrNoKey, clip(v))
	}
	return a, nil
}
