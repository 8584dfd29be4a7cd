package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// A Source is the forwarding header that a trusted proxy sets to name the
// client. The zero Source is invalid.
type Source int

// The forwarding headers TrustedProxy reads.
const (
	// XForwardedFor is X-Forwarded-For: a list of addresses, each proxy
	// appending the peer it saw. The client is the rightmost address that
	// is not a trusted proxy.
	XForwardedFor Source = iota + 1
	// Forwarded is the RFC 7239 Forwarded header, read like
	// X-Forwarded-For through the for= parameter of each element.
	Forwarded
	// XRealIP is X-Real-IP: one address that the proxy overwrites (nginx's
	// realip module). The last value wins if the header is repeated.
	XRealIP
)

// name returns the header's name, for errors.
func (s Source) name() string {
	switch s {
	case XForwardedFor:
		return "X-Forwarded-For"
	case Forwarded:
		return "Forwarded"
	case XRealIP:
		return "X-Real-IP"
	}
	return fmt.Sprintf("Source(%d)", int(s))
}

// TrustedProxy returns a Func that keys a request by the client address
// behind reverse proxies. The forwarding header src is honoured only when
// the direct peer (RemoteAddr) is inside one of the trusted prefixes
// ("10.0.0.0/8", "2001:db8::/32", or a bare address for a single proxy);
// from any other peer the header is ignored and the peer itself is the
// client, exactly as RemoteHost would key it. A client that reaches the
// server directly therefore cannot choose its key by sending a forged
// header. Keys have the form of RemoteHost's ("203.0.113.7" or "ip6:.../64"),
// so a client has one key whether or not it came through the proxy.
//
// Only one header is read: the one your proxy sets or overwrites. Reading
// a second one that the proxy passes through untouched would let clients
// write it.
//
// For X-Forwarded-For and Forwarded the addresses are walked from the
// right (the hop nearest this server) to the left, skipping trusted
// proxies; the first untrusted address is the client. If every address is
// trusted, the leftmost is the client. The request has no key (an error
// wrapping ErrNoKey) when a trusted peer sent no such header, or when the
// walk meets, before the client, an entry that is not an address:
// garbage, "unknown", an RFC 7239 obfuscated identifier ("_hidden"), a
// Forwarded element without for=. Such entries cannot be told apart from
// one another, so keying by them would put unrelated clients in one
// bucket, and skipping them would trust what lies to their left.
//
// A prefix that does not parse, or no prefix at all, is a constructor
// error. IPv4-mapped prefixes (::ffff:10.0.0.0/104) are folded to IPv4.
// Addresses are matched against the prefixes as they arrive: a NAT64
// address (64:ff9b::10.0.0.2) is not inside 10.0.0.0/8, since a translator
// chose it, not the proxy; it is keyed by the IPv4 client it carries, as
// RemoteHost does.
func TrustedProxy(src Source, trusted []string, opts ...Option) (Func, error) {
	if src < XForwardedFor || src > XRealIP {
		return nil, fmt.Errorf("%w: TrustedProxy: unknown %s", ErrInvalidOption, src.name())
	}
	prefixes, err := parsePrefixes(trusted)
	if err != nil {
		return nil, err
	}
	c, err := newConfig("TrustedProxy", addrKind, opts)
	if err != nil {
		return nil, err
	}
	var client func(http.Header, []netip.Prefix) (netip.Addr, error)
	switch src {
	case XForwardedFor:
		client = xffClient
	case Forwarded:
		client = forwardedClient
	default:
		client = realIPClient
	}
	return func(r *http.Request) (string, error) {
		peer, err := peerAddr(r.RemoteAddr)
		if err != nil {
			return "", err
		}
		if !contains(prefixes, peer) {
			return c.addrKey(peer), nil
		}
		a, err := client(r.Header, prefixes)
		if err != nil {
			return "", err
		}
		return c.addrKey(a), nil
	}, nil
}

// parsePrefixes parses the trusted prefixes once, at construction.
func parsePrefixes(ss []string) ([]netip.Prefix, error) {
	if len(ss) == 0 {
		return nil, fmt.Errorf("%w: TrustedProxy: no trusted proxy prefix (use RemoteHost when there is no proxy)", ErrInvalidOption)
	}
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		s = strings.TrimSpace(s)
		var p netip.Prefix
		var err error
		if strings.IndexByte(s, '/') >= 0 {
			p, err = netip.ParsePrefix(s)
		} else {
			var a netip.Addr
			if a, err = netip.ParseAddr(s); err == nil {
				if a.Zone() != "" {
					err = fmt.Errorf("zone not allowed")
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%w: TrustedProxy: trusted prefix %q: %v", ErrInvalidOption, s, err)
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// contains reports whether a normalized address is inside any prefix.
func contains(prefixes []netip.Prefix, a netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
