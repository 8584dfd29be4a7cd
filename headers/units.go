package headers

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"

	"github.com/fixedwindow/ratelimit/internal/rank"
	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

// WithUnitHeaders makes a Writer set, beside the single X-RateLimit-* set
// (which keeps describing the most restrictive decision of all), one set
// per unit the response's decisions count in (limiter.Policy.Unit):
//
//	X-RateLimit-Limit-Requests: 60
//	X-RateLimit-Remaining-Requests: 59
//	X-RateLimit-Reset-Requests: 1785499260
//	X-RateLimit-Limit-Tokens: 40000
//	X-RateLimit-Remaining-Tokens: 38500
//	X-RateLimit-Reset-Tokens: 1785499260
//
// the names the client libraries of model APIs read
// (x-ratelimit-remaining-tokens over HTTP/2 and gRPC, in lower case).
// Each set describes the most restrictive decision of its unit (of its
// name: "acme-tokens" and "other-tokens" share the Tokens set) among
// those Write is given, on admissions and refusals alike: a refusal by
// the tokens still says what is left of the requests. The plain
// X-RateLimit-* describe the decision closest to exhaustion whatever
// its unit (Write's d): with limits of several units, the unit whose
// set shows the same numbers. A unit names its
// set by its name, a unit of the service's own without its vendor prefix
// ("acme-tokens": Tokens; "content-bytes": Content-Bytes); the prefix of
// the names is Names' Limit, Remaining and Reset (WithNames). An
// in-flight cap's decision has no set of its own. Without the legacy
// fields (WithoutLegacyHeaders) there are none, and New refuses it.
// Default: off.
func WithUnitHeaders() Option { return func(c *config) { c.units = true } }

// unitNames are the names of one unit's set of fields.
type unitNames struct{ limit, remaining, reset string }

// unitCache maps a unit to its field names, made on first use.
type unitCache struct{ m sync.Map }

// names returns the field names of unit's set.
func (w *Writer) unitNames(unit string) unitNames {
	if v, ok := w.unitSets.m.Load(unit); ok {
		return v.(unitNames)
	}
	suffix := "-" + refusal.UnitName(unit)
	n := unitNames{
		limit:     textproto.CanonicalMIMEHeaderKey(w.names.Limit + suffix),
		remaining: textproto.CanonicalMIMEHeaderKey(w.names.Remaining + suffix),
		reset:     textproto.CanonicalMIMEHeaderKey(w.names.Reset + suffix),
	}
	if w.lower {
		n = unitNames{strings.ToLower(n.limit), strings.ToLower(n.remaining), strings.ToLower(n.reset)}
	}
	w.unitSets.m.Store(unit, n)
	return n
}

// WritesEveryDecision reports whether Write writes more of the other
// decisions it is given than of the first: the draft fields (RateLimit
// lists every decision's windows) or WithUnitHeaders (a set per unit). A
// door that keeps every decision for Write need not keep them otherwise.
func (w *Writer) WritesEveryDecision() bool { return w.draft || w.units }

// writeUnits sets one unit set per unit name of d and all (two vendors'
// units of one name share a set), each from the most restrictive
// decision of that unit: every unit whose limit applied to the request,
// side by side, on admissions and refusals alike. A cap's decision has
// no set.
func (w *Writer) writeUnits(h http.Header, d *limiter.Decision, all []*limiter.Decision) {
	var seen [8]string
	n := 0
	for i := -1; i < len(all); i++ {
		o := d
		if i >= 0 {
			o = all[i]
		}
		if o == nil || refusal.IsCap(o) || o.Policy == nil || i >= 0 && o.Policy == d.Policy {
			continue // d describes its own policy; a decision of no policy has no unit
		}
		unit := refusal.UnitName(o.Policy.Unit())
		if contains(seen[:n], unit) {
			continue
		}
		best := o
		for _, x := range all[i+1:] {
			if x != nil && !refusal.IsCap(x) && x.Policy != nil && x.Policy != d.Policy && refusal.UnitName(x.Policy.Unit()) == unit && rank.More(x, best) {
				best = x
			}
		}
		w.writeUnit(h, best)
		if n < len(seen) {
			seen[n] = unit
			n++
		}
	}
}

// writeUnit sets the unit set of d's unit from d.
func (w *Writer) writeUnit(h http.Header, d *limiter.Decision) {
	if d == nil || refusal.IsCap(d) || !w.units {
		return
	}
	n := w.unitNames(d.Policy.Unit())
	h[n.limit] = []string{w.ints.format(sfInteger(d.Limit))}
	h[n.remaining] = []string{strconv.FormatInt(sfInteger(d.Remaining), 10)}
	h[n.reset] = []string{w.ints.format(refusal.UnixCeil(d.ResetAt))}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
