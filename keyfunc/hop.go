package keyfunc

import (
	"net/netip"
	"strings"
)

// parseHop parses one address written by a proxy: "203.0.113.7",
// "203.0.113.7:4711", "2001:db8::7", "[2001:db8::7]" or
// "[2001:db8::7]:4711", with surrounding spaces. The address comes back
// normalized. Anything else ("unknown", an obfuscated node, a name, two
// addresses) is rejected.
//
// With forwarded set, the rules of an RFC 7239 node apply: an IPv6
// address must be bracketed, because in "2001:db8::1:80" nothing tells
// the last group from a port, and the port may be obfuscated ("_abc").
func parseHop(s string, forwarded bool) (netip.Addr, bool) {
	obfPort := forwarded
	s = strings.TrimSpace(s)
	if s == "" {
		return netip.Addr{}, false
	}
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.Addr{}, false
		}
		a, err := netip.ParseAddr(s[1:end])
		if err != nil || !a.Is6() {
			return netip.Addr{}, false
		}
		if rest := s[end+1:]; rest != "" && (rest[0] != ':' || !hopPort(rest[1:], obfPort)) {
			return netip.Addr{}, false
		}
		return normalize(a), true
	}
	if a, err := netip.ParseAddr(s); err == nil && (a.Is4() || !forwarded) {
		return normalize(a), true
	}
	// Only IPv4 may carry a port unbracketed: in IPv6 the colon is ambiguous.
	i := strings.IndexByte(s, ':')
	if i < 0 || !hopPort(s[i+1:], obfPort) {
		return netip.Addr{}, false
	}
	a, err := netip.ParseAddr(s[:i])
	if err != nil || !a.Is4() {
		return netip.Addr{}, false
	}
	return a, true
}

// hopPort reports whether p is a decimal port or, when obf is set, an
// obfuscated port: '_' followed by ALPHA, DIGIT, '.', '_' or '-'.
func hopPort(p string, obf bool) bool {
	if obf && len(p) > 1 && p[0] == '_' {
		return obfChars(p[1:])
	}
	return validPort(p)
}

// obfChars reports whether s is made of the characters RFC 7239 allows in
// obfuscated identifiers.
func obfChars(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
