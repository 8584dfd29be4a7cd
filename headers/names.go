package headers

import (
	"fmt"
	"net/textproto"
)

// Names are the header field names a Writer sets (WithNames). An empty
// field keeps the default shown. Names are case-insensitive on the wire; the Writer stores
// them in canonical form (X-Ratelimit-Limit), as http.Header.Set would.
// The zero Names keeps every default.
type Names struct {
	Limit           string // X-RateLimit-Limit
	Remaining       string // X-RateLimit-Remaining
	Reset           string // X-RateLimit-Reset
	RetryAfter      string // Retry-After
	RateLimit       string // RateLimit (draft)
	RateLimitPolicy string // RateLimit-Policy (draft)
}

// defaultNames returns the names a Writer uses unless told otherwise.
func defaultNames() Names {
	return Names{
		Limit:           "X-RateLimit-Limit",
		Remaining:       "X-RateLimit-Remaining",
		Reset:           "X-RateLimit-Reset",
		RetryAfter:      "Retry-After",
		RateLimit:       "RateLimit",
		RateLimitPolicy: "RateLimit-Policy",
	}
}

// canonical fills empty names with the defaults, checks that each is a
// valid field name and that no two are the same, and returns them in
// canonical form.
func (n Names) canonical() (Names, error) {
	def := defaultNames()
	fields := []struct {
		p   *string
		def string
	}{
		{&n.Limit, def.Limit}, {&n.Remaining, def.Remaining}, {&n.Reset, def.Reset},
		{&n.RetryAfter, def.RetryAfter}, {&n.RateLimit, def.RateLimit}, {&n.RateLimitPolicy, def.RateLimitPolicy},
	}
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if *f.p == "" {
			*f.p = f.def
		}
		if !validToken(*f.p) {
			return n, fmt.Errorf("%w: header name %q is not a valid field name", ErrInvalidOption, *f.p)
		}
		*f.p = textproto.CanonicalMIMEHeaderKey(*f.p)
		if seen[*f.p] {
			return n, fmt.Errorf("%w: header name %q given twice", ErrInvalidOption, *f.p)
		}
		seen[*f.p] = true
	}
	return n, nil
}

// validToken reports whether s is an RFC 9110 token, the syntax of a
// field name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !ok {
			switch c {
			case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
			default:
				return false
			}
		}
	}
	return true
}
