package headers

import (
	"net/http"
	"strconv"
	"time"
	"unsafe"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

// block is the single allocation of a Write: the header values, their
// one-element slices, and the bytes the values are made of. http.Header
// values must be fresh slices, since handlers may modify them, and a value
// that differs per request needs fresh bytes; one block holds both.
type block struct {
	vals [4]string // limit, remaining, reset, retry
	buf  [48]byte  // room for two 20-character numbers: remaining, retry
}

// bigBlock is a block with room for the draft fields of one or two
// windows; a longer RateLimit value grows into a second allocation.
type bigBlock struct {
	vals [6]string
	buf  [224]byte
}

// Write sets the rate-limit headers of d on h: X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset (the Unix second, rounded
// up, at which the deciding window ends), the draft RateLimit and
// RateLimit-Policy fields when enabled, and on a denial only, Retry-After
// in whole seconds rounded up, at least 1 (none for a cost no wait can
// admit: d.CostExceedsLimit). On an admission it removes any
// Retry-After. A nil d writes nothing.
//
// all lists the decisions of a response that several limits applied to
// (the limiters of one middleware, stacked middlewares, in-flight caps),
// in the order they applied; d is then the most restrictive of them (or
// the refusal) and sets X-RateLimit-* and Retry-After alone. RateLimit-
// Policy names the policy of each decision of all, each policy once,
// d's first if all lacks it, and RateLimit lists the windows (a cap: its
// slots left) of each, in the same order: a client reads every balance
// the response names, the month's beside the minute's, the tokens'
// beside the requests'. For d's own policy d is described, not all's
// decision of it (a shadow refusal let through reads as an admission
// with nothing left). With WithUnitHeaders each unit's set describes the
// most restrictive decision of that unit among d and all. Without all,
// or with d's policy alone, the fields describe d.
//
// Write is on every request's path: it formats numbers into one heap block
// per call (one allocation, see BenchmarkWrite; none with WriteBuffer) and
// sets the map with pre-canonicalised names, never through fmt or
// Header.Set.
//
// The draft t is the time from the decision's own instant (DecidedAt) to
// its reset. A Decision that carries none (a custom middleware.Limiter's
// that limiter.Dated did not date; the middleware dates them) is dated by
// the system clock.
func (w *Writer) Write(h http.Header, d *limiter.Decision, all ...*limiter.Decision) {
	w.write(h, d)
	if d == nil {
		return
	}
	if w.units {
		w.writeUnits(h, d, all)
	}
	if w.draft && anotherPolicy(d, all) {
		w.writeLists(h, d, all)
	}
}

// anotherPolicy reports whether a decision of all is of a policy other
// than d's.
func anotherPolicy(d *limiter.Decision, all []*limiter.Decision) bool {
	for _, o := range all {
		if o != nil && o.Policy != d.Policy {
			return true
		}
	}
	return false
}

// write is Write of d alone.
func (w *Writer) write(h http.Header, d *limiter.Decision) {
	if d == nil || !w.legacy && !w.draft && d.Allowed {
		if d != nil {
			delete(h, w.names.RetryAfter)
		}
		return
	}
	if w.legacy && !w.draft {
		w.writeLegacy(h, d)
		return
	}
	var vals []string
	var b []byte
	if w.draft {
		blk := new(bigBlock)
		vals, b = blk.vals[:0:len(blk.vals)], blk.buf[:0]
	} else {
		blk := new(block)
		vals, b = blk.vals[:0:len(blk.vals)], blk.buf[:0]
	}
	type field struct {
		name       string
		str        string // a formatted value from the cache, or
		start, end int    // the value's place in b
	}
	var fields [6]field
	n := 0
	add := func(name string, start int) {
		fields[n] = field{name: name, start: start, end: len(b)}
		n++
	}
	if w.legacy {
		// The limit and the reset change rarely (per policy, per
		// window): their strings come from a cache, and only the
		// remaining count is formatted per request.
		fields[0] = field{name: w.names.Limit, str: w.ints.format(sfInteger(d.Limit))}
		n++
		s := len(b)
		b = strconv.AppendInt(b, sfInteger(d.Remaining), 10)
		add(w.names.Remaining, s)
		if refusal.IsCap(d) {
			delete(h, w.names.Reset) // a cap has no window to reset
		} else {
			fields[n] = field{name: w.names.Reset, str: w.ints.format(refusal.UnixCeil(d.ResetAt))}
			n++
		}
	}
	if !d.Allowed && !refusal.Never(d) {
		s := len(b)
		b = strconv.AppendInt(b, refusal.Seconds(d.RetryAfter), 10)
		add(w.names.RetryAfter, s)
	}
	var policyValue string
	if w.draft {
		// The decision's own instant: no second clock reading, and the
		// store's clock when it has one (Redis's TIME). Only a decision
		// no one dated has none.
		at := d.DecidedAt()
		if at.IsZero() {
			at = time.Now()
		}
		var s int
		s, b, policyValue = w.appendDraft(b, d, at)
		add(w.names.RateLimit, s)
	}
	// The bytes are final: every value is a substring of one string that
	// aliases them, as strings.Builder does. Nothing writes to b again.
	all := unsafe.String(unsafe.SliceData(b), len(b))
	for i := range n {
		f := fields[i]
		if f.str != "" {
			vals = append(vals, f.str)
		} else {
			vals = append(vals, all[f.start:f.end])
		}
		h[f.name] = vals[i : i+1 : i+1]
	}
	if policyValue != "" {
		vals = append(vals, policyValue)
		h[w.names.RateLimitPolicy] = vals[n : n+1 : n+1]
	}
	if d.Allowed || refusal.Never(d) {
		delete(h, w.names.RetryAfter)
	}
}

// A Buffer is room for the values of one Write of the legacy fields on
// an admission, for a caller that allocates it together with other
// per-request state and so saves Write its own allocation (the middleware
// keeps one in the state it puts in the request's context). The header
// values written into a Buffer alias it: write into it once, and keep it,
// as Go keeps any value, while the response's header map is in use. The
// zero Buffer is ready. It is 64 bytes: the three values the headers'
// slices hold, and the remaining count's digits.
type Buffer struct {
	vals [3]string // limit, remaining, reset; written into once vals[0] is set
	buf  [16]byte  // the remaining count, at most 15 digits (limiter.MaxLimit)
}

// WriteBuffer is Write with buf, unless it is nil or already written
// into, as the storage of the legacy fields of an admission: no
// allocation. A denial (its Retry-After), and the draft fields when
// enabled, are formatted into an allocation of their own as ever.
func (w *Writer) WriteBuffer(buf *Buffer, h http.Header, d *limiter.Decision, all ...*limiter.Decision) {
	if buf == nil || buf.vals[0] != "" || d == nil || !d.Allowed || !w.legacy || w.draft || w.units {
		w.Write(h, d, all...)
		return
	}
	w.writeLegacyInto(buf.vals[:], buf.buf[:0], h, d)
}

// writeLegacy is Write without the draft fields, the default and the
// common case: the limit and reset strings come from the cache, the
// remaining count (and on a denial the retry) are formatted into the one
// block that also backs the values' slices. The limit and the remaining
// count are clamped as the draft's are: a custom Limiter's -5 is sent as
// 0, which a client can act on.
func (w *Writer) writeLegacy(h http.Header, d *limiter.Decision) {
	blk := new(block)
	w.writeLegacyInto(blk.vals[:], blk.buf[:0], h, d)
}

// writeLegacyInto is writeLegacy into the storage vals (room for the
// four values, three on an admission) and b (room for the numbers it
// formats, which do not outgrow it).
func (w *Writer) writeLegacyInto(vals []string, b []byte, h http.Header, d *limiter.Decision) {
	vals[0] = w.ints.format(sfInteger(d.Limit))
	b = strconv.AppendInt(b, sfInteger(d.Remaining), 10)
	vals[1] = unsafe.String(&b[0], len(b))
	h[w.names.Limit] = vals[0:1:1]
	h[w.names.Remaining] = vals[1:2:2]
	if refusal.IsCap(d) {
		delete(h, w.names.Reset) // a cap has no window to reset
	} else {
		vals[2] = w.ints.format(refusal.UnixCeil(d.ResetAt))
		h[w.names.Reset] = vals[2:3:3]
	}
	if d.Allowed || refusal.Never(d) {
		delete(h, w.names.RetryAfter)
		return
	}
	n := len(b)
	b = strconv.AppendInt(b, refusal.Seconds(d.RetryAfter), 10)
	vals[3] = unsafe.String(&b[n], len(b)-n)
	h[w.names.RetryAfter] = vals[3:4:4]
}

// writeLists sets RateLimit-Policy and RateLimit to name, in one order,
// the policy of every decision of all (each policy once, d's first
// unless all has it) and its windows: d itself for d's policy. Each item
// is at its own decision's instant (a calendar window's w is the length
// of the one current then). It keeps no pointer it is given, so that
// the doors' decisions stay on their stacks.
func (w *Writer) writeLists(h http.Header, d *limiter.Decision, all []*limiter.Decision) {
	var limit, policy []byte
	if !hasPolicy(all, d.Policy) {
		limit, policy = w.appendItems(limit, policy, d)
	}
	for i, o := range all {
		switch {
		case o == nil || hasPolicy(all[:i], o.Policy):
		case o.Policy == d.Policy:
			limit, policy = w.appendItems(limit, policy, d)
		default:
			limit, policy = w.appendItems(limit, policy, o)
		}
	}
	h[w.names.RateLimit] = []string{string(limit)}
	h[w.names.RateLimitPolicy] = []string{string(policy)}
}

// hasPolicy reports whether a decision of ds is of policy p.
func hasPolicy(ds []*limiter.Decision, p *limiter.Policy) bool {
	for _, o := range ds {
		if o != nil && o.Policy == p {
			return true
		}
	}
	return false
}

// appendItems appends to the RateLimit and RateLimit-Policy values the
// items of d, at its own instant.
func (w *Writer) appendItems(limit, policy []byte, d *limiter.Decision) ([]byte, []byte) {
	at := d.DecidedAt()
	if at.IsZero() {
		at = time.Now()
	}
	if len(limit) > 0 {
		limit, policy = append(limit, ", "...), append(policy, ", "...)
	}
	_, limit, p := w.appendDraft(limit, d, at)
	return limit, append(policy, p...)
}

// appendDraft appends the RateLimit value of d to b and returns where it
// starts, the new b and the RateLimit-Policy value: every window of d's
// policy. A decision not made by limiter.Decide describes its deciding
// window only (NumWindows is 0), which is then listed alone.
func (w *Writer) appendDraft(b []byte, d *limiter.Decision, now time.Time) (int, []byte, string) {
	start := len(b)
	n := d.NumWindows()
	if d.Policy == nil {
		q := `"` + windowName(nil, d.Window) + `"`
		b = appendService(b, q, d.Remaining, d.ResetAt.Sub(now))
		return start, b, string(appendPolicyItem(nil, q, d.Limit, d.Window))
	}
	info := w.policies.get(d.Policy)
	policy := info.policyAt(now)
	if refusal.IsCap(d) {
		return start, appendCapItem(b, info.quoted[0], d.Remaining), policy
	}
	if n == 0 {
		i := info.deciding(d)
		if i < 0 {
			q := `"` + windowName(d.Policy, d.Window) + `"`
			return start, appendService(b, q, d.Remaining, d.ResetAt.Sub(now)), policy
		}
		return start, appendService(b, info.quoted[i], d.Remaining, d.ResetAt.Sub(now)), policy
	}
	for i := range min(n, len(info.quoted)) {
		ws := d.WindowAt(i)
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendService(b, info.quoted[i], ws.Remaining, ws.ResetAt.Sub(now))
	}
	return start, b, policy
}

// appendService appends one RateLimit item: "name";r=remaining;t=seconds.
func appendService(b []byte, quoted string, remaining int64, untilReset time.Duration) []byte {
	b = append(b, quoted...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, sfInteger(remaining), 10)
	b = append(b, ";t="...)
	return strconv.AppendInt(b, refusal.CeilSeconds(untilReset), 10)
}

// sfInteger clamps n into 0 to limiter.MaxLimit, the non-negative
// structured-field Integers (at most 15 digits). A policy's limits are
// bounded by NewPolicy, so this changes nothing a limiter decided; it
// keeps a custom Limiter's out-of-range numbers from making the whole
// field unparseable.
func sfInteger(n int64) int64 { return min(max(n, 0), limiter.MaxLimit) }
