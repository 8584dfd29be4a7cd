package headers

import (
	"strconv"

	"github.com/fixedwindow/ratelimit/limiter"
)

// DescribeLimit returns the limit of d's deciding window in the words of
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
func DescribeLimit(d *limiter.Decision) string {
	if !describable(d) {
		return ""
	}
	return string(appendLimit(make([]byte, 0, 32), d))
}

// describable reports whether d has a limit and a window to describe.
func describable(d *limiter.Decision) bool {
	return d != nil && d.Limit > 0 && d.Window > 0
}

// appendLimit appends DescribeLimit's text of a describable d.
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
		if i := matchWindow(d, p.NumRates()); i >= 0 {
			if period, _, ok := p.Rate(i).Calendar(); ok {
				return period
			}
		}
	}
	return windowSuffix(d.Window)
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

// matchWindow returns the place, among the first n, of the decision's own
// window (WindowAt) whose numbers are d's, or -1: a decision of a policy
// with calendar rates names its deciding window by them.
func matchWindow(d *limiter.Decision, n int) int {
	for i := range min(d.NumWindows(), n) {
		ws := d.WindowAt(i)
		if ws.Limit == d.Limit && ws.Remaining == d.Remaining && ws.Window == d.Window && ws.ResetAt().Equal(d.ResetAt) {
			return i
		}
	}
	return -1
}

// DescribeRefusal returns what a refusal d tells the client, retry
// seconds before it may try again, in the words of the 429 problem body's
// detail: "rate limit of 1000 per month exceeded; retry in 1424580
// seconds", "concurrency limit of 5 exceeded; retry in 2 seconds" for an
// in-flight cap, "rate limit exceeded; retry in 1 second" for a decision
// with no window to describe. A cost no wait can admit
// (d.CostExceedsLimit) is "request cost exceeds the rate limit of 50000
// per day; no wait will admit it", whatever retry. grpclimit's
// RESOURCE_EXHAUSTED message and QuotaFailure say the same, so that both
// doors refuse in one text.
func DescribeRefusal(d *limiter.Decision, retry int64) string {
	return string(appendRefusal(make([]byte, 0, 80), d, retry))
}

// appendRefusal appends DescribeRefusal's text to b.
func appendRefusal(b []byte, d *limiter.Decision, retry int64) []byte {
	if never(d) {
		b = append(b, "request cost exceeds the rate limit"...)
		if describable(d) {
			b = append(b, " of "...)
			b = appendLimit(b, d)
		}
		return append(b, "; no wait will admit it"...)
	}
	if isCap(d) {
		b = append(b, "concurrency limit of "...)
		b = strconv.AppendInt(b, sfInteger(d.Limit), 10)
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
func never(d *limiter.Decision) bool { return d != nil && !d.Allowed && d.CostExceedsLimit }
