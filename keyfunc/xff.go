package keyfunc

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// xffClient walks X-Forwarded-For from the right, over every header line
// in order received (so a duplicate header cannot hide entries), and
// returns the first address outside the trusted prefixes, or the leftmost
// address when all are trusted.
func xffClient(h http.Header, trusted []netip.Prefix) (netip.Addr, error) {
	lines := h["X-Forwarded-For"]
	var last netip.Addr
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		for line != "" {
			var entry string
			if j := strings.LastIndexByte(line, ','); j >= 0 {
				entry, line = line[j+1:], line[:j]
			} else {
				entry, line = line, ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a, ok := parseHop(entry, false)
			if !ok {
				return netip.Addr{}, fmt.Errorf("%w: X-Forwarded-For entry %q is not an address", ErrNoKey, clip(entry))
			}
			if !contains(trusted, a) {
				return a, nil
			}
			last = a
		}
	}
	if !last.IsValid() {
		return netip.Addr{}, fmt.Errorf("%w: trusted proxy sent no X-Forwarded-For", ErrNoKey)
	}
	return last, nil
}
