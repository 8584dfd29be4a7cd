package limiter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// A Usage is what one key has used of a limit at one instant: every
// window of a limiter's policy (Limiter.Usage), or the slots it holds of
// an in-flight cap (InFlight.Usage). It is what an account page or a
// usage endpoint shows a customer: the month's balance beside the
// minute's, where a response's X-RateLimit-* headers describe only the
// window closest to exhaustion.
//
// It marshals to JSON as
//
//	{"policy":"plan","at":"2026-12-03T09:30:00.25Z","windows":[
//	  {"window":"month@Europe/Paris","limit":1000,"used":3,"remaining":997,
//	   "reset":"2026-12-31T23:00:00Z","window_seconds":2678400},
//	  {"window":"1m0s","limit":20,"used":1,"remaining":19,"reset":"2026-12-03T09:31:00Z","window_seconds":60}]}
//
// and a cap's as {"policy":"exports","at":"...","in_flight":{"limit":4,"used":1,"remaining":3}}.
// Times are UTC, to the millisecond.
//
// The zero Usage describes nothing.
type Usage struct {
	// Policy is the limiter's policy (its limits are the ones applied),
	// or the cap's.
	Policy *Policy
	// At is the instant the usage was read at: the limiter's clock, or
	// the store's (Redis's TIME under redisstore.WithServerClock).
	At time.Time
	// Windows has one status per rate of Policy, in its order; none for
	// a cap.
	Windows []WindowStatus
	// Held is how many slots of a cap the key holds now (Policy's
	// MaxInFlight at most, unless the cap was lowered under them); 0 for
	// a limiter's usage.
	Held int64
}

// ErrUncounted reports a usage the store could not read: it answered
// without counting, as a store failing open does while its backend is
// away (see Uncharged).
var ErrUncounted = errors.New("limiter: usage unknown: the store answered without counting")

// Usage returns what key has used of each window of l's policy, read
// from the store without charging anything (one Peek), under l's limits:
// a limiter For returned reads the same counts against its own
// limits. A key never seen has used nothing. Errors are Peek's, and
// ErrUncounted for a store that answered without reading its counts.
//
// On a store shared by replicas the counts are every replica's; with
// redisstore's leases they include units leased to replicas and not yet
// spent.
func (l *Limiter) Usage(ctx context.Context, key string) (Usage, error) {
	d, err := l.Peek(ctx, key, 1)
	if err != nil {
		return Usage{}, err
	}
	if d.uncharged || !d.windows {
		return Usage{}, fmt.Errorf("%w (policy %q)", ErrUncounted, l.policy.name)
	}
	if d.Allowed { // a peek reports the windows as if charged: take it back
		for i := range d.Policy.rates {
			d.remaining[i]++
		}
	}
	return d.usage(), nil
}

// usage returns the windows as d left them: every window of its policy
// for a decision Decide made (an admission's cost counted as used, a
// refusal's not), and for one made otherwise (a custom Limiter's) its
// deciding window alone, from its fields. A cap's decision (InFlight)
// reads as its slots held.
func (d *Decision) usage() Usage {
	u := Usage{Policy: d.Policy, At: d.DecidedAt()}
	if m := d.Policy.MaxInFlight(); m > 0 {
		u.Held = d.Limit - d.Remaining
		return u
	}
	n := d.NumWindows()
	if n == 0 {
		ws := WindowStatus{Limit: d.Limit, Used: max(0, d.Limit-d.Remaining), Remaining: d.Remaining, Window: d.Window,
			Name: d.Window.String(), ResetAt: d.ResetAt}
		u.Windows = []WindowStatus{ws}
		return u
	}
	u.Windows = make([]WindowStatus, n)
	for i := range n {
		u.Windows[i] = d.WindowAt(i)
	}
	return u
}

// jsonWindow and jsonCap are Usage's JSON, field by field.
type jsonWindow struct {
	Window        string `json:"window"`
	Limit         int64  `json:"limit"`
	Used          int64  `json:"used"`
	Remaining     int64  `json:"remaining"`
	Reset         string `json:"reset"`
	WindowSeconds int64  `json:"window_seconds"`
}

type jsonCap struct {
	Limit     int64 `json:"limit"`
	Used      int64 `json:"used"`
	Remaining int64 `json:"remaining"`
}

type jsonUsage struct {
	Policy   string       `json:"policy"`
	At       string       `json:"at"`
	Windows  []jsonWindow `json:"windows,omitempty"`
	InFlight *jsonCap     `json:"in_flight,omitempty"`
}

// jsonTime is RFC 3339 in UTC, to the millisecond.
const jsonTime = "2006-01-02T15:04:05.999Z07:00"

// MarshalJSON writes u as the Usage type's documentation shows.
func (u Usage) MarshalJSON() ([]byte, error) {
	j := jsonUsage{At: u.At.UTC().Format(jsonTime)}
	if u.Policy != nil {
		j.Policy = u.Policy.Name()
	}
	if m := u.Policy.MaxInFlight(); m > 0 {
		j.InFlight = &jsonCap{Limit: m, Used: u.Held, Remaining: max(0, m-u.Held)}
	}
	for _, w := range u.Windows {
		j.Windows = append(j.Windows, jsonWindow{
			Window: w.Name, Limit: w.Limit, Used: w.Used, Remaining: w.Remaining,
			Reset: w.ResetAt.UTC().Format(jsonTime), WindowSeconds: int64(w.Window / time.Second),
		})
	}
	return json.Marshal(j)
}
