// Package refusal holds the words and numbers both doors answer a
// refusal with, so that a client is told alike over HTTP (package
// headers: the 429 body, Retry-After) and gRPC (grpclimit: the status
// message, QuotaFailure, the pushback): the text of a refusal and of the
// limit that made it, the seconds of a wait, and the names of windows
// and units.
package refusal

import (
	"strconv"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Limit returns the limit of d's deciding window in the words of
// the 429 problem body: "1000 per month", "100 per day", "20 per week"
// for a calendar window, named after its period whatever its length (a
// month of 28 or 31 days, a day of 23 hours); "100 per 1m", "5 per 1s",
// "10 per 90s", "3 per 500ms" for a fixed window, its length in its
// largest whole unit, as the draft fields name windows. It returns "" for
// a decision with no window to describe: nil, an in-flight cap's, or a
// custom limiter's without a positive Limit and Window.
//
// The problem body's detail ("rate limit of 1000 per month exceeded")
// and grpclimit's QuotaFailure are built with it, so that both doors
// name a limit alike.
func Limit(d *limiter.Decision) string {
	if !describable(d) {
		return ""
	}
	return string(appendLimit(make([]byte, 0, 32), d))
}

// describable reports whether d has a limit and a window to describe.
func describable(d *limiter.Decision) bool {
	return d != nil && d.Limit > 0 && d.Window > 0
}

// appendLimit appends Limit's text of a describable d.
func appendLimit(b []byte, d *limiter.Decision) []byte {
	b = strconv.AppendInt(b, d.Limit, 10)
	b = append(b, " per "...)
	return append(b, unitOf(d)...)
}

// unitOf returns what d's deciding window is "per": a calendar window's
// period ("day", "week", "month"), else the window's length ("1m").
// Only a calendar window's length varies, so only a policy with one needs
// its deciding window found among the decision's own (see
// policyInfo.deciding).
func unitOf(d *limiter.Decision) string {
	if p := d.Policy; p != nil && hasCalendar(p) {
		if i := MatchWindow(d, p.NumRates()); i >= 0 {
			if period, _, ok := p.Rate(i).Calendar(); ok {
				return period
			}
		}
	}
	return WindowSuffix(d.Window)
}

// hasCalendar reports whether p has a calendar rate.
func hasCalendar(p *limiter.Policy) bool {
	for i := range p.NumRates() {
		if _, _, ok := p.Rate(i).Calendar(); ok {
			return true
		}
	}
	return false
}

// MatchWindow returns the place, among the first n, of the decision's own
// window (WindowAt) whose numbers are d's, or -1: a decision of a policy
// with calendar rates names its deciding window by them.
func MatchWindow(d *limiter.Decision, n int) int {
	for i := range min(d.NumWindows(), n) {
		ws := d.WindowAt(i)
		if ws.Limit == d.Limit && ws.Remaining == d.Remaining && ws.Window == d.Window && ws.ResetAt.Equal(d.ResetAt) {
			return i
		}
	}
	return -1
}

// Text returns what a refusal d tells the client, retry
// seconds before it may try again, in the words of the 429 problem body's
// detail: "rate limit of 1000 per month exceeded; retry in 1424580
// seconds", "concurrency limit of 5 exceeded; retry in 2 seconds" for an
// in-flight cap, "rate limit exceeded; retry in 1 second" for a decision
// with no window to describe. A cost no wait can admit
// (d.CostExceedsLimit) is "request cost exceeds the rate limit of 50000
// per day; no wait will admit it", whatever retry. grpclimit's
// RESOURCE_EXHAUSTED message and QuotaFailure say the same, so that both
// doors refuse in one text.
func Text(d *limiter.Decision, retry int64) string {
	return string(AppendText(make([]byte, 0, 80), d, retry))
}

// AppendText appends Text's text to b.
func AppendText(b []byte, d *limiter.Decision, retry int64) []byte {
	if Never(d) {
		b = append(b, "request cost exceeds the rate limit"...)
		if describable(d) {
			b = append(b, " of "...)
			b = appendLimit(b, d)
		}
		return append(b, "; no wait will admit it"...)
	}
	if IsCap(d) {
		b = append(b, "concurrency limit of "...)
		b = strconv.AppendInt(b, clamp(d.Limit), 10)
	} else {
		b = append(b, "rate limit"...)
	}
	if describable(d) {
		b = append(b, " of "...)
		b = appendLimit(b, d)
	}
	b = append(b, " exceeded; retry in "...)
	b = strconv.AppendInt(b, retry, 10)
	b = append(b, " second"...)
	if retry != 1 {
		b = append(b, 's')
	}
	return b
}

// never reports a refusal no wait turns into an admission: its cost
// exceeds a window's limit (limiter.Decision.CostExceedsLimit).
func Never(d *limiter.Decision) bool { return d != nil && !d.Allowed && d.CostExceedsLimit }

// Seconds returns the Retry-After value for a wait of d: whole
// seconds, rounded up so that a client waiting that long never arrives
// before the window resets, and at least 1, because "Retry-After: 0"
// invites an immediate retry that would be refused. 29.5s gives 30, 1ms
// gives 1, exactly 30s gives 30, and zero or a negative wait gives 1.
func Seconds(d time.Duration) int64 {
	if d <= time.Second {
		return 1
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// SubSecond returns the wait of a refusal d whose deciding window is
// shorter than a second, in whole milliseconds rounded up (at least 1),
// and true; 0 and false for any other decision. HTTP's Retry-After and
// the draft's t count whole seconds, at least 1, which overstate such a
// wait up to a thousandfold: the problem body and gRPC's RetryInfo and
// pushback carry this figure beside them.
func SubSecond(d *limiter.Decision) (int64, bool) {
	if d == nil || d.Allowed || Never(d) || d.Window <= 0 || d.Window >= time.Second {
		return 0, false
	}
	ms := int64(d.RetryAfter / time.Millisecond)
	if d.RetryAfter%time.Millisecond != 0 {
		ms++
	}
	return max(ms, 1), true
}

// CeilSeconds returns a wait of d in whole seconds rounded up, and 0 for a
// wait that is not positive. It gives the draft's reset parameter, which
// may be 0.
func CeilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return Seconds(d)
}

// UnixCeil returns t in Unix seconds, rounded up: a reset announced for a
// whole second must not come before the real boundary of a window whose
// length is not a whole number of seconds.
func UnixCeil(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() != 0 {
		s++
	}
	return s
}

// IsCap reports whether d is an in-flight cap's decision.
func IsCap(d *limiter.Decision) bool { return d != nil && d.Policy.MaxInFlight() > 0 }

// clamp clamps n into 0 to limiter.MaxLimit, the non-negative
// structured-field Integers.
func clamp(n int64) int64 { return min(max(n, 0), limiter.MaxLimit) }

// WindowSuffix formats a whole number of milliseconds in its largest
// whole unit: "1m", "90s", "500ms".
func WindowSuffix(w time.Duration) string {
	ms := w.Milliseconds()
	units := []struct {
		ms   int64
		unit string
	}{{86_400_000, "d"}, {3_600_000, "h"}, {60_000, "m"}, {1000, "s"}}
	for _, u := range units {
		if ms > 0 && ms%u.ms == 0 {
			return strconv.FormatInt(ms/u.ms, 10) + u.unit
		}
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// UnitName returns the name a unit's set of X-RateLimit-* fields is
// suffixed with (headers.WithUnitHeaders): the draft's units as they are
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
