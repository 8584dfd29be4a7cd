package addrkey

import "net/netip"

// Normalize folds an IPv4-mapped IPv6 address (::ffff:a.b.c.d) to IPv4 and
// drops any IPv6 zone, so that one client has one form: a dual-stack
// listener reports IPv4 clients as mapped addresses, and a zone names the
// receiving interface, not the client. Addresses a translator wrote
// (NAT64) are folded later, by Key: trusted prefixes are matched against
// the address the peer or proxy actually used.
func Normalize(a netip.Addr) netip.Addr {
	return a.Unmap().WithZone("")
}

// Key returns the key of a normalized address: the bare dotted quad
// "203.0.113.7" for IPv4 (or "203.0.113.0/24" when v4Bits is 24) and
// "ip6:2001:db8:1:2::/64" for IPv6, the address masked to v6Bits. v4Bits
// is 0 to 32 and v6Bits 0 to 128; the callers check their options' ranges.
// It allocates once.
//
// IPv4 keys carry no kind prefix so that keyfunc.RemoteHost can key a
// plain IPv4 peer by a substring of RemoteAddr, with no parse and no
// allocation (the most common request pays least); a dotted quad cannot
// be mistaken for a key of another kind, all of which start with letters
// and a colon.
//
// An IPv6 address that only carries an IPv4 client, written by a
// translator (NAT64) or in the deprecated IPv4-compatible form, is keyed
// by that IPv4 address, as a mapped one is: otherwise every IPv4 client
// behind one translator would share the translator's /64.
func Key(a netip.Addr, v4Bits, v6Bits int) string {
	var buf [64]byte
	b := buf[:0]
	if a.Is6() {
		if v4, ok := EmbeddedIPv4(a); ok {
			a = v4
		} else if NAT64Local.Contains(a) {
			// A local-use translator prefix longer than /48 puts the
			// IPv4 address where this cannot read it; the whole
			// address still names one IPv4 client.
			v6Bits = 128
		}
	}
	if a.Is4() {
		if v4Bits == 32 {
			b = a.AppendTo(b)
		} else {
			p, _ := a.Prefix(v4Bits)
			b = p.AppendTo(b)
		}
		return string(b)
	}
	p, _ := a.Prefix(v6Bits)
	b = append(b, "ip6:"...)
	b = p.AppendTo(b)
	return string(b)
}

// The NAT64 prefixes: the well-known one (RFC 6052) and the one for local
// use (RFC 8215). Read only.
var (
	NAT64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	NAT64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
)

// Forms returns every form in which the IPv4 address v4 may reach a
// server, each of which Key folds to v4's key: itself, IPv4-mapped,
// behind a NAT64 translator (the well-known /96 and the local-use /48
// prefix), and IPv4-compatible (not for 0.0.0.0 and 0.0.0.1, which are
// :: and ::1). For tests of every door's keys.
func Forms(v4 netip.Addr) []netip.Addr {
	b := v4.As4()
	forms := []netip.Addr{
		v4,
		netip.AddrFrom16([16]byte{10: 0xff, 11: 0xff, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 12: b[0], 13: b[1], 14: b[2], 15: b[3]}),
		netip.AddrFrom16([16]byte{1: 0x64, 2: 0xff, 3: 0x9b, 5: 1, 6: b[0], 7: b[1], 9: b[2], 10: b[3]}),
	}
	if b[0]|b[1]|b[2] != 0 || b[3] > 1 {
		forms = append(forms, netip.AddrFrom16([16]byte{12: b[0], 13: b[1], 14: b[2], 15: b[3]}))
	}
	return forms
}

// EmbeddedIPv4 returns the IPv4 address embedded in a (a normalized IPv6
// address) by a NAT64 translator or in the IPv4-compatible form
// (::a.b.c.d), and whether there is one. The positions are RFC 6052's
// for the prefix length: the last 32 bits after the /96 well-known prefix;
// bits 48-63 and 72-87 after the /48 local-use prefix, skipping the
// u-octet (bits 64-71), which must be zero, as must the suffix after the
// address (bits 88-127): an address inside 64:ff9b:1::/48 that breaks
// either rule was written under a longer prefix and is not read here. The
// unspecified address (::) and loopback (::1) are not IPv4-compatible.
func EmbeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case NAT64WellKnown.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:])), true
	case NAT64Local.Contains(a):
		if b[8] != 0 || b[11]|b[12]|b[13]|b[14]|b[15] != 0 {
			return netip.Addr{}, false
		}
		return netip.AddrFrom4([4]byte{b[6], b[7], b[9], b[10]}), true
	case [12]byte(b[:12]) == [12]byte{} && (b[12]|b[13]|b[14] != 0 || b[15] > 1):
		return netip.AddrFrom4([4]byte(b[12:])), true
	}
	return netip.Addr{}, false
}
