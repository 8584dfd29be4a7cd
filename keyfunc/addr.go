package keyfunc

import (
	"net/netip"
)

// normalize folds an IPv4-mapped IPv6 address (::ffff:a.b.c.d) to IPv4 and
// drops any IPv6 zone, so that one client has one form: a dual-stack
// listener reports IPv4 clients as mapped addresses, and a zone names the
// receiving interface, not the client.
func normalize(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// addrKey returns the key of a normalized address: the bare dotted quad
// "203.0.113.7" for IPv4 (or "203.0.113.0/24" with a shorter
// WithIPv4Prefix) and "ip6:2001:db8:1:2::/64" for IPv6, the address masked
// to the configured prefix. It allocates once.
//
// IPv4 keys carry no kind prefix so that RemoteHost can key a plain IPv4
// peer by a substring of RemoteAddr, with no parse and no allocation (the
// most common request pays least); a dotted quad cannot be mistaken for a
// key of another kind, all of which start with letters and a colon.
func (c *config) addrKey(a netip.Addr) string {
	var buf [64]byte
	b := buf[:0]
	if a.Is4() {
		if c.v4Bits == 32 {
			b = a.AppendTo(b)
		} else {
			p, _ := a.Prefix(c.v4Bits)
			b = p.AppendTo(b)
		}
		return string(b)
	}
	p, _ := a.Prefix(c.v6Bits)
	b = append(b, "ip6:"...)
	b = p.AppendTo(b)
	return string(b)
}
