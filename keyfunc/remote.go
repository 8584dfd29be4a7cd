package keyfunc

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// RemoteHost returns a Func that keys a request by the host of its
// RemoteAddr, the address of the TCP peer. The port is dropped, because it
// changes with every connection while the host does not. IPv4-mapped IPv6
// addresses fold to IPv4, zones are dropped and IPv6 addresses are grouped
// by their /64 (see WithIPv6Prefix), so the key is "203.0.113.7" or
// "ip6:2001:db8:1:2::/64".
//
// An IPv6 address that carries an IPv4 client is keyed by that client, as
// a mapped one is: a NAT64 translator's (64:ff9b::a.b.c.d, and the
// local-use 64:ff9b:1::/48 read at RFC 6052's /48 positions) and the
// deprecated IPv4-compatible form (::a.b.c.d, but not :: or ::1), so the
// IPv4 clients behind one translator do not share its /64. An address
// inside 64:ff9b:1::/48 written under a longer prefix, whose IPv4 part
// cannot be located, is keyed whole ("ip6:64:ff9b:1::c000:221/128").
//
// A bare address ("203.0.113.7", "2001:db8::1", "[2001:db8::1]") is keyed
// the same way: it is what a middleware that rewrites RemoteAddr from a
// forwarding header leaves there (chi's middleware.RealIP). A RemoteAddr
// that is neither "host:port" with an IP host nor an IP address (a name,
// a Unix socket's "@", an empty port, garbage) yields an error wrapping
// ErrNoKey.
//
// Behind a reverse proxy every request comes from the proxy, so use
// TrustedProxy there, or a middleware in front that rewrites RemoteAddr
// only from a proxy you trust.
func RemoteHost(opts ...Option) (Func, error) {
	c, err := newConfig("RemoteHost", addrKind, opts)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		if c.v4Bits == 32 {
			if host, ok := plainIPv4(r.RemoteAddr); ok {
				return host, nil
			}
		}
		a, err := peerAddr(r.RemoteAddr)
		if err != nil {
			return "", err
		}
		return c.addrKey(a), nil
	}, nil
}

// peerAddr parses RemoteAddr as "host:port" with an IP host, or as a bare
// address (see bareAddr), and returns the normalized address.
func peerAddr(remoteAddr string) (netip.Addr, error) {
	if a, ok := bareAddr(remoteAddr); ok {
		return normalize(a), nil
	}
	host, port, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q is neither host:port nor an IP address", ErrNoKey, clip(remoteAddr))
	}
	if !validPort(port) {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q has no valid port", ErrNoKey, clip(remoteAddr))
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("%w: RemoteAddr %q has no IP host", ErrNoKey, clip(remoteAddr))
	}
	return normalize(a), nil
}

// bareAddr parses a RemoteAddr without a port: an IPv4 address, an IPv6
// address with a zone or not, or an IPv6 address in brackets. What has
// exactly one colon outside brackets is "host:port" and is left to
// net.SplitHostPort, which is also the reading of net.ParseIP: in
// "2001:db8::1:80" the last group is part of the address, not a port. The
// shape is checked before parsing, so that a "host:port" costs no failed
// parse (and its allocation).
func bareAddr(s string) (netip.Addr, bool) {
	n := len(s)
	bracketed := n > 2 && s[0] == '[' && s[n-1] == ']'
	switch {
	case bracketed:
		s = s[1 : n-1]
	case n == 0 || s[0] == '[' || strings.Count(s, ":") == 1:
		return netip.Addr{}, false
	}
	if strings.ContainsAny(s, "[]") { // in a zone, which netip would take
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil && (a.Is6() || !bracketed)
}

// plainIPv4 returns the host of remoteAddr when it is an IPv4 address in
// canonical dotted-quad form, followed by a valid port ("203.0.113.7:52139")
// or bare, as chi's RealIP leaves it ("203.0.113.7"):
// then the host is already the key that peerAddr and addrKey would build,
// and slicing it out costs neither a parse nor an allocation. Any other
// form (IPv6, mapped, leading zeros, garbage) reports false and takes the
// general path.
func plainIPv4(remoteAddr string) (string, bool) {
	host := remoteAddr
	if i := strings.LastIndexByte(remoteAddr, ':'); i >= 0 {
		if i < 7 || !validPort(remoteAddr[i+1:]) {
			return "", false
		}
		host = remoteAddr[:i]
	}
	dots, val, digits := 0, 0, 0
	for j := 0; j < len(host); j++ {
		switch c := host[j]; {
		case c >= '0' && c <= '9':
			if digits == 1 && val == 0 {
				return "", false // a leading zero
			}
			val = val*10 + int(c-'0')
			digits++
			if val > 255 {
				return "", false
			}
		case c == '.' && digits > 0:
			dots++
			val, digits = 0, 0
		default:
			return "", false
		}
	}
	return host, dots == 3 && digits > 0
}

// validPort reports whether p is a decimal port, 0 to 65535.
func validPort(p string) bool {
	if p == "" || len(p) > 5 {
		return false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		if p[i] < '0' || p[i] > '9' {
			return false
		}
		n = n*10 + int(p[i]-'0')
	}
	return n <= 65535
}
