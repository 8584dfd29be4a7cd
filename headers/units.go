package headers

import (
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fixedwindow/ratelimit/internal/rank"
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
// name: "acme-tokens" and "other-tokens" share the Tokens set): with
// WriteAll, every decision given; with Write, the one. A unit names its
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
	suffix := "-" + UnitName(unit)
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

// UnitName returns the name a unit's set of X-RateLimit-* fields is
// suffixed with (WithUnitHeaders): the draft's units as they are
// ("requests", "content-bytes"), a unit of the service's own without its
// vendor prefix, up to the first '-' ("acme-tokens": "tokens").
func UnitName(unit string) string {
	if unit == limiter.UnitRequests || unit == limiter.UnitContentBytes {
		return unit
	}
	if _, rest, ok := strings.Cut(unit, "-"); ok {
		return rest
	}
	return unit
}

// WriteAll sets the headers of a response that several decisions let
// through (the limiters of one middleware, each of its own unit, say):
// ds[0], the most restrictive, sets X-RateLimit-*, Retry-After and the
// first items of the draft RateLimit as Write does, and RateLimit then
// lists every window of each other decision's policy, each policy once,
// in ds's order; with WithUnitHeaders, each unit's set describes the most
// restrictive decision of that unit. applied is as Write takes it. A nil
// decision in ds is skipped.
func (w *Writer) WriteAll(h http.Header, ds []*limiter.Decision, applied ...*limiter.Policy) {
	if len(ds) == 0 || ds[0] == nil {
		return
	}
	w.Write(h, ds[0], applied...)
	if len(ds) == 1 {
		return
	}
	if w.draft {
		w.appendOthers(h, ds)
	}
	if w.units {
		w.writeUnits(h, ds)
	}
}

// WritesEveryDecision reports whether WriteAll writes more than Write
// writes of its first decision: with the draft fields (RateLimit lists
// every decision's windows) or WithUnitHeaders (a set per unit). A door
// that keeps several decisions for WriteAll need not keep them
// otherwise.
func (w *Writer) WritesEveryDecision() bool { return w.draft || w.units }

// appendOthers adds to RateLimit the windows of ds[1:], each policy once
// and none already listed (ds[0]'s).
func (w *Writer) appendOthers(h http.Header, ds []*limiter.Decision) {
	vs := h[w.names.RateLimit]
	if len(vs) != 1 {
		return
	}
	b := []byte(vs[0])
	for i, d := range ds[1:] {
		if d == nil || isCap(d) || samePolicyAmong(d, ds[:i+1]) {
			continue
		}
		at := d.DecidedAt()
		if at.IsZero() {
			at = time.Now()
		}
		b = append(b, ", "...)
		_, b, _ = w.appendDraft(b, d, at)
	}
	h[w.names.RateLimit] = []string{string(b)}
}

// samePolicyAmong reports whether one of ds decided under d's policy.
func samePolicyAmong(d *limiter.Decision, ds []*limiter.Decision) bool {
	for _, o := range ds {
		if o != nil && o.Policy == d.Policy {
			return true
		}
	}
	return false
}

// writeUnits sets one unit set per unit name of ds (two vendors' units of
// one name share a set), from its most restrictive decision.
func (w *Writer) writeUnits(h http.Header, ds []*limiter.Decision) {
	var seen [8]string
	n := 0
	for i, d := range ds {
		if d == nil || isCap(d) {
			continue
		}
		unit := UnitName(d.Policy.Unit())
		if contains(seen[:n], unit) {
			continue
		}
		best := d
		for _, o := range ds[i+1:] {
			if o != nil && !isCap(o) && UnitName(o.Policy.Unit()) == unit && rank.More(o, best) {
				best = o
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
	if d == nil || isCap(d) || !w.units {
		return
	}
	n := w.unitNames(d.Policy.Unit())
	h[n.limit] = []string{w.ints.format(sfInteger(d.Limit))}
	h[n.remaining] = []string{strconv.FormatInt(sfInteger(d.Remaining), 10)}
	h[n.reset] = []string{w.ints.format(unixCeil(d.ResetAt))}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
