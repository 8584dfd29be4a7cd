package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// forwardedClient reads the RFC 7239 Forwarded header: it parses every
// header line into elements, then walks their for= values from the right,
// skipping trusted proxies. A syntax error anywhere makes the whole header
// unusable: a quoted string that does not end could hide where one element
// stops and the next begins.
func forwardedClient(h http.Header, trusted []netip.Prefix) (netip.Addr, error) {
	lines := h["Forwarded"]
	if len(lines) == 0 {
		return netip.Addr{}, fmt.Errorf("%w: trusted proxy sent no Forwarded header", ErrNoKey)
	}
	var buf [8]forValue // most chains are short; longer ones grow on the heap
	fors := buf[:0]
	for _, line := range lines {
		var err error
		if fors, err = parseForwarded(fors, line); err != nil {
			return netip.Addr{}, err
		}
	}
	var last netip.Addr
	for i := len(fors) - 1; i >= 0; i-- {
		f := fors[i]
		if !f.ok {
			return netip.Addr{}, fmt.Errorf("%w: Forwarded element %d has no for=", ErrNoKey, i)
		}
		if strings.EqualFold(f.v, "unknown") || strings.HasPrefix(f.v, "_") {
			return netip.Addr{}, fmt.Errorf("%w: Forwarded for=%q names no address", ErrNoKey, clip(f.v))
		}
		a, ok := parseHop(f.v, true)
		if !ok {
			return netip.Addr{}, fmt.Errorf("%w: Forwarded for=%q is not an address", ErrNoKey, clip(f.v))
		}
		if !contains(trusted, a) {
			return a, nil
		}
		last = a
	}
	if !last.IsValid() {
		return netip.Addr{}, fmt.Errorf("%w: Forwarded header has no element", ErrNoKey)
	}
	return last, nil
}

// A forValue is the for= parameter of one Forwarded element; ok is false
// when the element has none.
type forValue struct {
	v  string
	ok bool
}

// parseForwarded appends to fors the for= value of each element of one
// Forwarded header line:
//
//	Forwarded        = 1#forwarded-element
//	forwarded-element = [ forwarded-pair ] *( ";" [ forwarded-pair ] )
//	forwarded-pair   = token "=" value
//	value            = token / quoted-string
//
// Parameter names are case-insensitive; spaces are allowed around ',' and
// ';'. Elements with no pair at all are list padding and are skipped. A
// second for= in one element is an error.
func parseForwarded(fors []forValue, s string) ([]forValue, error) {
	i := 0
	for {
		var f forValue
		pairs := 0
		for {
			i = skipOWS(s, i)
			if i >= len(s) || s[i] == ',' {
				break
			}
			if s[i] == ';' {
				i++
				continue
			}
			start := i
			for i < len(s) && isTchar(s[i]) {
				i++
			}
			name := s[start:i]
			if name == "" || i >= len(s) || s[i] != '=' {
				return nil, fmt.Errorf("%w: Forwarded %q: expected name=value at byte %d", ErrNoKey, clip(s), start)
			}
			i++
			var v string
			var err error
			if v, i, err = forwardedValue(s, i); err != nil {
				return nil, err
			}
			pairs++
			if strings.EqualFold(name, "for") {
				if f.ok {
					return nil, fmt.Errorf("%w: Forwarded %q: two for= in one element", ErrNoKey, clip(s))
				}
				f = forValue{v: v, ok: true}
			}
			i = skipOWS(s, i)
			if i < len(s) && s[i] != ';' && s[i] != ',' {
				return nil, fmt.Errorf("%w: Forwarded %q: unexpected %q at byte %d", ErrNoKey, clip(s), s[i], i)
			}
		}
		if pairs > 0 {
			fors = append(fors, f)
		}
		if i >= len(s) {
			return fors, nil
		}
		i++ // the ','
	}
}

// forwardedValue parses a token or a quoted-string at s[i:] and returns
// its value and the index after it.
func forwardedValue(s string, i int) (string, int, error) {
	if i < len(s) && s[i] == '"' {
		var b strings.Builder
		escaped := false
		for j := i + 1; j < len(s); j++ {
			c := s[j]
			switch {
			case c == '\\':
				if j+1 >= len(s) {
					return "", 0, fmt.Errorf("%w: Forwarded %q: escape at the end", ErrNoKey, clip(s))
				}
				if !escaped {
					b.WriteString(s[i+1 : j])
					escaped = true
				}
				j++
				b.WriteByte(s[j])
			case c == '"':
				if !escaped {
					return s[i+1 : j], j + 1, nil
				}
				return b.String(), j + 1, nil
			case c < ' ' && c != '\t' || c == 0x7f:
				return "", 0, fmt.Errorf("%w: Forwarded %q: control character in quoted string", ErrNoKey, clip(s))
			default:
				if escaped {
					b.WriteByte(c)
				}
			}
		}
		return "", 0, fmt.Errorf("%w: Forwarded %q: unterminated quoted string", ErrNoKey, clip(s))
	}
	// RFC 7239 wants IPv6 and ports quoted, but proxies often write them
	// bare; ':', '[' and ']' cannot end a value, so accepting them is
	// unambiguous.
	start := i
	for i < len(s) && (isTchar(s[i]) || s[i] == ':' || s[i] == '[' || s[i] == ']') {
		i++
	}
	if i == start {
		return "", 0, fmt.Errorf("%w: Forwarded %q: empty value at byte %d", ErrNoKey, clip(s), start)
	}
	return s[start:i], i, nil
}

func skipOWS(s string, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
		i++
	}
	return i
}

// isTchar reports whether c may appear in an RFC 9110 token.
func isTchar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
