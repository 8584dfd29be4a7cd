package limiter

import (
	"fmt"
	"strings"
)

// The quota units of the IETF draft's registry
// (draft-ietf-httpapi-ratelimit-headers): what a policy's cost counts.
const (
	// UnitRequests counts requests: a request costs 1 (or a weight). It
	// is every policy's unit unless WithUnit says otherwise.
	UnitRequests = "requests"
	// UnitContentBytes counts the bytes of content a response sends,
	// known once it has been sent (middleware.WithBytes).
	UnitContentBytes = "content-bytes"
)

// maxUnitLen bounds a unit's name, which goes in headers.
const maxUnitLen = 32

// WithUnit returns a policy of p's name, windows and limits that counts
// in unit: UnitRequests, UnitContentBytes, or a unit of the service's own,
// which the draft asks to be named with a vendor prefix, "<vendor>-<unit>"
// ("acme-tokens" for a model's tokens). The draft RateLimit-Policy field
// names it (qu="content-bytes"), and headers.WithUnitHeaders names the
// X-RateLimit-*-<Unit> fields after it (the unit without its vendor
// prefix: X-RateLimit-Remaining-Tokens). A unit changes what the limit
// means, not the usage: the counters are p's (its ID is p's), so give a
// policy of another unit a name of its own. A unit is 1 to 32 characters
// of a-z, 0-9 and '-', starting with a letter; errors wrap
// ErrInvalidPolicy.
func (p *Policy) WithUnit(unit string) (*Policy, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	if err := validUnit(unit); err != nil {
		return nil, fmt.Errorf("%w: policy %q: %v", ErrInvalidPolicy, p.name, err)
	}
	q := *p
	q.rates, q.spans = append([]Rate(nil), p.rates...), append([]span(nil), p.spans...)
	if unit == UnitRequests {
		unit = ""
	}
	q.unit = unit
	return &q, nil
}

// MustUnit is WithUnit that panics on error, for policies fixed in code:
//
//	tokens := limiter.MustPolicy("tokens", limiter.PerMinute(40_000)).MustUnit("acme-tokens")
func (p *Policy) MustUnit(unit string) *Policy {
	q, err := p.WithUnit(unit)
	if err != nil {
		panic(err)
	}
	return q
}

// Unit returns what the policy's cost counts: UnitRequests unless
// WithUnit said otherwise; "concurrent-requests" for an in-flight cap's.
func (p *Policy) Unit() string {
	switch {
	case p == nil:
		return ""
	case p.inFlight > 0:
		return "concurrent-requests"
	case p.unit == "":
		return UnitRequests
	}
	return p.unit
}

// validUnit reports why unit cannot name a quota unit.
func validUnit(unit string) error {
	if unit == "" || len(unit) > maxUnitLen {
		return fmt.Errorf("unit %q must be 1 to %d characters", unit, maxUnitLen)
	}
	if c := unit[0]; c < 'a' || c > 'z' {
		return fmt.Errorf("unit %q must start with a lower-case letter", unit)
	}
	for i := 0; i < len(unit); i++ {
		c := unit[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return fmt.Errorf("unit %q has character %q (allowed: a-z 0-9 and -)", unit, c)
		}
	}
	if unit == "concurrent-requests" {
		return fmt.Errorf("unit %q is an in-flight cap's (NewInFlight)", unit)
	}
	if unit != UnitRequests && unit != UnitContentBytes && !strings.Contains(unit[1:], "-") {
		return fmt.Errorf("unit %q is none of the draft's registry (requests, content-bytes): name a unit of your own with a vendor prefix, as %q", unit, "acme-"+unit)
	}
	if unit != UnitRequests && unit != UnitContentBytes {
		// A vendor's unit is named, in X-RateLimit-*-<Unit>, by what
		// follows its prefix.
		_, name, _ := strings.Cut(unit, "-")
		switch {
		case name == "" || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-"):
			return fmt.Errorf("unit %q: want a name after the vendor prefix, as \"acme-tokens\"", unit)
		case name == UnitRequests || name == UnitContentBytes || name == "concurrent-requests":
			return fmt.Errorf("unit %q would be named %q, as a unit of the draft's registry is: give it a name of its own", unit, name)
		}
	}
	return nil
}
