package limiter

import (
	"fmt"
	"time"

	"github.com/fixedwindow/ratelimit/internal/window"
)

// A Decision is the answer to one request: admitted or not, and what the
// client may be told about the window that decided. A denial is a Decision
// with Allowed false, never an error.
//
// The zero Decision is a denial with no window; stores never return it
// without an error.
type Decision struct {
	// Allowed reports whether the request was admitted (and charged).
	Allowed bool
	// CostExceedsLimit reports a refusal no wait can turn into an
	// admission: the request's cost is more than a window of the
	// policy admits at all (a reservation of 60,000 tokens on a day of
	// 50,000). RetryAfter is then zero, and the doors answer without a
	// Retry-After (gRPC: no RetryInfo, pushback -1), saying that the
	// cost exceeds the limit. ResetAt and Remaining describe that window
	// as ever.
	CostExceedsLimit bool

	// Beside Allowed, the flags and the nanoseconds fill the word its
	// padding would waste: a Decision is copied on every request's path
	// (returned by value, kept in the middleware's per-request state).
	uncharged bool  // admitted without a charge: nothing to refund
	windows   bool  // made by Decide: nowMs and remaining describe every window
	datedNs   int32 // not made by Decide, but given its instant by Dated: 1 + the nanoseconds of the instant past nowMs; 0 if not

	// Limit is the deciding window's limit.
	Limit int64
	// Remaining is the cost still available in the deciding window after
	// this request; never negative.
	Remaining int64
	// ResetAt is the aligned end of the deciding window, when its count
	// starts again: for a calendar rate, the next local boundary.
	ResetAt time.Time
	// RetryAfter is how long until the deciding window resets; zero when
	// Allowed, and when the cost exceeds the limit (CostExceedsLimit),
	// which no wait helps. It points at the aligned boundary, never at
	// "one window from now".
	RetryAfter time.Duration
	// Window is the length of the deciding window (for a calendar rate,
	// of the current one: a day of 23 hours where the clocks spring
	// forward). On a denial it is the refusing window that resets last;
	// on an admission, the window with the least remaining (the closest
	// to exhaustion).
	Window time.Duration
	// Policy is the policy that decided.
	Policy *Policy

	nowMs     int64 // the instant decided at, Unix ms
	remaining [MaxWindows]int64
}

// Dated returns d with its instant set to at, for a Decision not made by
// Decide (a custom middleware.Limiter's, built field by field), which
// carries none: DecidedAt then reports at, to the nanosecond, and the
// headers count the seconds until ResetAt from it. Such a decision still describes its
// deciding window alone (NumWindows is 0). A decision Decide made keeps
// its own instant: Dated returns it unchanged.
func Dated(d Decision, at time.Time) Decision {
	if !d.windows {
		d.nowMs, d.datedNs = at.UnixMilli(), datedNs(at)
	}
	return d
}

// datedNs returns what Decision.datedNs holds for a decision dated at:
// one more than the nanoseconds of at past its millisecond.
func datedNs(at time.Time) int32 { return int32(at.Nanosecond()%int(time.Millisecond)) + 1 }

// Uncharged returns d marked as charged to nothing, for a store that
// admits without counting (a fail-open answer while its backend is away):
// refunding it returns nothing.
func Uncharged(d Decision) Decision {
	d.uncharged = true
	return d
}

// AtMost returns d with Remaining, and every window's remaining, at most
// n (never below zero), for a store that decides from a share of the
// budget it holds alone (redisstore's leases): Decide chose the deciding
// window from the counts as the store last saw them, and the client is
// told no more than the store is sure of.
func AtMost(d Decision, n int64) Decision {
	n = max(n, 0)
	d.Remaining = min(d.Remaining, n)
	for i := range d.remaining {
		d.remaining[i] = min(d.remaining[i], n)
	}
	return d
}

// Settled returns d as it reads once the request it admitted is charged
// actual rather than reserved, the cost d charged: every window's
// remaining moved by reserved − actual (below zero for a key taken into
// debt, which Remaining clamps), for a door that describes a request
// whose cost is known only later (middleware.WithReported: its headers
// are written at the response's first byte, from what the handler has
// reported by then). A refusal, and a decision charged to nothing, are
// returned as they are. It changes no count: Settler does.
func Settled(d Decision, reserved, actual int64) Decision {
	if !d.Allowed || d.uncharged || actual == reserved {
		return d
	}
	delta := reserved - actual
	if !d.windows {
		d.Remaining = max(0, d.Remaining+delta)
		return d
	}
	pick := -1
	for i := range d.Policy.rates {
		d.remaining[i] += delta
		// The deciding window of an admission, as Decide picks it: the
		// least remaining, on a tie the longer window. Every window moved
		// alike, so it is the same one.
		if pick < 0 || d.remaining[i] < d.remaining[pick] ||
			d.remaining[i] == d.remaining[pick] && d.Policy.spans[i].ms > d.Policy.spans[pick].ms {
			pick = i
		}
	}
	d.Remaining = max(0, d.remaining[pick])
	return d
}

// Refundable reports whether d charged windows of policy p that a refund
// may return to, for stores: an admission that was charged, made under a
// policy of p's id (an error otherwise).
func Refundable(d Decision, p *Policy) (bool, error) {
	switch {
	case !d.Allowed || d.uncharged || d.Policy == nil:
		return false, nil
	case d.Policy.ID() != p.ID():
		return false, fmt.Errorf("%w: refund of a decision under policy %q, not %q", ErrInvalidPolicy, d.Policy.Name(), p.Name())
	}
	return true, nil
}

// A WindowStatus describes one window of a policy after a decision: its
// limit, what the key has used of it and what remains.
type WindowStatus struct {
	Limit int64
	// Used is the cost charged to the key in the window, this decision's
	// included when it charged. It exceeds Limit for a key in debt (its
	// limit lowered under what it had used, a cost settled past it).
	Used int64
	// Remaining is Limit − Used, never below zero.
	Remaining int64
	Window    time.Duration // the window's length (a calendar window's, its own)
	// Name names the window: its length ("1m0s"), or a calendar rate's
	// period and zone ("month@Europe/Paris").
	Name string
	// ResetAt is the aligned end of this window.
	ResetAt time.Time
}

// DecidedAt returns the instant the decision was made at, to the
// millisecond (to the nanosecond for one Dated dated): the limiter's
// single clock reading (or the store's clock, such as Redis's TIME), so
// that anything derived from the decision, like a "seconds until reset"
// header, needs no clock of its own. It is the
// zero time.Time for a Decision neither Decide made nor Dated dated (the
// zero Decision, a custom Limiter's); the middleware dates those.
func (d *Decision) DecidedAt() time.Time {
	switch {
	case d.datedNs > 0:
		return time.UnixMilli(d.nowMs).Add(time.Duration(d.datedNs - 1))
	case !d.windows:
		return time.Time{}
	}
	return time.UnixMilli(d.nowMs)
}

// NumWindows returns how many windows the decision describes: one per rate
// of its policy for a decision Decide made, 0 for one made otherwise (a
// custom Limiter's), whose fields describe its deciding window alone.
func (d *Decision) NumWindows() int {
	if d.Policy == nil || !d.windows {
		return 0
	}
	return len(d.Policy.rates)
}

// WindowAt returns the status of window i, in the order of the policy's
// rates, after the decision, for i from 0 to NumWindows()-1; it panics
// if i is out of range. It allocates nothing. For a calendar rate,
// Window is the length of the window the decision was made in.
func (d *Decision) WindowAt(i int) WindowStatus {
	r := d.Policy.rates[i]
	sp := &d.Policy.spans[i]
	left := d.remaining[i]
	ws := WindowStatus{Limit: r.Limit, Used: r.Limit - left, Remaining: max(0, left), Window: r.Window, Name: sp.label}
	if sp.cal != nil {
		start, end := sp.cal.Window(d.nowMs)
		ws.Window, ws.ResetAt = time.Duration(end-start)*time.Millisecond, time.UnixMilli(end)
		return ws
	}
	_, _, end := window.ID(d.nowMs, r.Window.Milliseconds())
	ws.ResetAt = time.UnixMilli(end)
	return ws
}
