package limiter

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unique"

	"github.com/fixedwindow/ratelimit/internal/calendar"
)

// MaxWindows is the most windows one policy may layer.
const MaxWindows = 4

// maxExactInteger is 2^53, the largest integer a Lua number (an IEEE double)
// holds exactly. The Redis store computes with such numbers.
const maxExactInteger int64 = 1 << 53

// MaxLimit is the largest limit a Rate may have: 999,999,999,999,999, the
// largest Integer of HTTP structured fields (RFC 9651 allows 15 digits).
// The draft RateLimit and RateLimit-Policy headers carry a limit and a
// remaining count, never more than the limit, as such Integers; bounding
// the limit here keeps every header a policy produces parseable by a
// strict parser, with no clamping at the writer.
const MaxLimit int64 = 999_999_999_999_999

// maxNameLen bounds a policy name; the name becomes part of storage keys
// and of response headers.
const maxNameLen = 64

// A Rate admits Limit units of cost per Window. Limit is 1 to MaxLimit;
// Window is a whole number of milliseconds, at least 1 ms, and Limit ×
// Window in ms is at most 2^53. The zero Rate is invalid.
//
// A literal is a Rate as good as PerSecond's: Rate{Limit: 10, Window:
// 100 * time.Millisecond} is ten per tenth of a second. Nothing is
// checked when a Rate is made, literal or not: NewPolicy (and MustPolicy,
// which panics instead) checks every rate of a policy and names the bad
// one in an error wrapping ErrInvalidPolicy, so no limiter ever holds an
// invalid Rate. A window under a second is exact in the limiter, and told
// as HTTP can tell it: the headers count whole seconds, rounded up, at
// least 1 (see package headers).
//
// A calendar rate (PerDayIn, PerWeekIn, PerMonthIn) admits Limit per
// day, ISO week or month of its location instead: its windows start at
// the local midnights of the zone, whatever the machine's own zone, and
// last as long as the calendar says (a day of 23 or 25 hours where the
// clocks change, a month of 28 to 31 days). Where a midnight does not
// exist (clocks that spring forward at 00:00), the day starts at the
// first instant that does. Its Window is zero, since its windows' lengths
// vary: Calendar describes it, and a Decision's Window gives the length
// of the current one. Its Limit is 1 to MaxLimit, with no exact-integer
// rule (see docs/algorithm.md). Build a calendar rate with those
// functions: its zone and period cannot be written in a literal; its
// Limit may be changed.
type Rate struct {
	Limit  int64
	Window time.Duration

	period calendar.Period // a calendar rate's, else zero
	loc    *time.Location  // a calendar rate's location
}

// PerSecond returns a Rate of n per second.
func PerSecond(n int64) Rate { return Rate{Limit: n, Window: time.Second} }

// PerMinute returns a Rate of n per minute.
func PerMinute(n int64) Rate { return Rate{Limit: n, Window: time.Minute} }

// PerHour returns a Rate of n per hour.
func PerHour(n int64) Rate { return Rate{Limit: n, Window: time.Hour} }

// String formats the rate as "100/1m0s", or a calendar rate as
// "10000/day@Europe/Paris".
func (r Rate) String() string {
	if r.period != 0 {
		return strconv.FormatInt(r.Limit, 10) + "/" + r.calendarName()
	}
	return strconv.FormatInt(r.Limit, 10) + "/" + r.Window.String()
}

// validate checks the window before anything divides by its length in
// milliseconds, then the limit, then that limit × window-in-ms stays within
// 2^53 (tested by division, so nothing can overflow), then that the limit
// is at most MaxLimit. A calendar rate has checks of its own.
func (r Rate) validate() error {
	if r.period != 0 {
		return r.validateCalendar()
	}
	if r.Window < time.Millisecond {
		return fmt.Errorf("window %v is shorter than 1ms", r.Window)
	}
	if r.Window%time.Millisecond != 0 {
		return fmt.Errorf("window %v is not a whole number of milliseconds", r.Window)
	}
	if r.Limit <= 0 {
		return fmt.Errorf("limit %d must be > 0", r.Limit)
	}
	if r.Limit > maxExactInteger/r.Window.Milliseconds() {
		return fmt.Errorf("limit %d per %v exceeds the exact integer budget (limit × window in ms must be ≤ 2^53)", r.Limit, r.Window)
	}
	if r.Limit > MaxLimit {
		return fmt.Errorf("limit %d exceeds MaxLimit %d, the largest structured-field Integer", r.Limit, MaxLimit)
	}
	return nil
}

// A Policy is a validated set of one to MaxWindows rates with distinct
// windows, under a name. Build one with NewPolicy; the zero Policy is
// invalid and every method that needs rates reports so. A Policy is
// immutable and safe to share.
//
// Usage belongs to the key, the limit to the policy. Stores keep a key's
// counter of each window under the policy's name and that window (its
// length, or its period and zone), never under a limit: a limit is
// looked up when a request is decided. So a deploy that changes a limit
// keeps what every key has used; two versions of a service running side
// by side during a rolling deploy count one usage, each applying its own
// limit; and a customer moved to another plan within a month keeps what
// they used (Plan, Limiter.For). Two limiters of one policy
// ID (name and windows) on one store would share their counters: New
// refuses the second while the first lives (see WithStore). Policies of
// one name and some other windows share the counters of the windows they
// have in common, per client key: a plan per time zone, each a month in
// its zone and a minute, keeps one minute's count for a customer who
// moves zone. Give policies distinct names to keep them apart.
type Policy struct {
	name  string
	rates []Rate
	spans []span // per rate, precomputed for the hot path
	id    string // name and windows, canonical: namespaces storage keys
	tag   uint64 // FNV-1a of the name: the memory store's hash of the policy, beside each window's table
	// uid is id, interned: policies of one ID (For's) compare equal by
	// a pointer.
	uid unique.Handle[string]
	// inFlight is an in-flight cap's maximum (NewInFlight), which has
	// no rates; 0 for a policy of rates.
	inFlight int64
	// unit is what a cost counts (WithUnit): "" for requests.
	unit string
}

// span is a rate's window in milliseconds, and the largest window id whose
// start (id × ms) stays within ±msBound/2, so Decide can test whether a
// stored id is current with a multiplication instead of a division, and
// the instant's distance from that start (both within ±2^62) cannot
// overflow. perUnit is maxSpent/limit, so that the memory store finds how
// spent a count is with a multiplication (see packCount). key names the
// memory store's table of the rate's windows: ms for a fixed window.
//
// A calendar rate's span has its windows' cache, cal (nil otherwise),
// and the nominal length of its windows as ms (see calendarSpan).
// name is the window's name in the policy's ID and in storage keys:
// its length in ms ("60000"), or "month@Europe/Paris"; label its name
// for people (WindowStatus.Name): "1m0s", or "month@Europe/Paris".
type span struct {
	ms, maxID   int64
	perUnit     float64
	key         int64
	cal         *calendar.Cache
	name, label string
}

// NewPolicy validates the rates (see Rate for the bounds; errors wrap
// ErrInvalidPolicy) and returns a policy. An empty name becomes
// "default". Names are 1 to 64 characters of A-Z, a-z, 0-9, '_', '-' and
// '.', because they appear in storage keys and response headers.
func NewPolicy(name string, rates ...Rate) (*Policy, error) {
	if name == "" {
		name = "default"
	}
	if err := validateName(name); err != nil {
		return nil, err
	}
	if len(rates) == 0 {
		return nil, fmt.Errorf("%w: policy %q has no rate", ErrInvalidPolicy, name)
	}
	if len(rates) > MaxWindows {
		return nil, fmt.Errorf("%w: policy %q has %d rates, at most %d", ErrInvalidPolicy, name, len(rates), MaxWindows)
	}
	var id strings.Builder
	id.WriteString(name)
	spans := make([]span, len(rates))
	for i, r := range rates {
		if err := r.validate(); err != nil {
			return nil, fmt.Errorf("%w: policy %q rate #%d (%v): %v", ErrInvalidPolicy, name, i+1, r, err)
		}
		for _, prev := range rates[:i] {
			// A calendar rate's windows are its period's in its zone:
			// a day in Paris and a day in UTC differ, and so do a day
			// and 24 hours.
			if prev.Window == r.Window && prev.period == r.period && zoneName(prev.loc) == zoneName(r.loc) {
				return nil, fmt.Errorf("%w: policy %q has two rates for window %v", ErrInvalidPolicy, name, r.windowName())
			}
		}
		if r.period != 0 {
			spans[i] = calendarSpan(r)
		} else {
			ms := r.Window.Milliseconds()
			spans[i] = span{ms: ms, maxID: msBound / 2 / ms, perUnit: maxSpent / float64(r.Limit), key: ms,
				name: strconv.FormatInt(ms, 10), label: r.Window.String()}
		}
		id.WriteByte(':')
		id.WriteString(spans[i].name)
	}
	p := &Policy{
		name:  name,
		rates: append([]Rate(nil), rates...),
		spans: spans,
		id:    id.String(),
		tag:   fnv64a(name),
	}
	p.uid = unique.Make(p.id)
	return p, nil
}

// MustPolicy is NewPolicy that panics on error, for policies fixed in code.
func MustPolicy(name string, rates ...Rate) *Policy {
	p, err := NewPolicy(name, rates...)
	if err != nil {
		panic(err)
	}
	return p
}

func validateName(name string) error {
	if len(name) > maxNameLen {
		return fmt.Errorf("%w: name is %d bytes, at most %d", ErrInvalidPolicy, len(name), maxNameLen)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("%w: name %q has character %q (allowed: A-Z a-z 0-9 and _-.)", ErrInvalidPolicy, name, c)
		}
	}
	return nil
}

// Name returns the policy's name.
func (p *Policy) Name() string { return p.name }

// NumRates returns how many windows the policy layers.
func (p *Policy) NumRates() int { return len(p.rates) }

// Rate returns the i'th rate, in the order given to NewPolicy, for i
// from 0 to NumRates()-1; it panics if i is out of range.
func (p *Policy) Rate(i int) Rate { return p.rates[i] }

// ID returns the canonical form of the policy's usage, such as
// "api:60000:1000": its name, then each rate's window (its length in ms,
// or period@zone for a calendar rate: "plan:month@Europe/Paris:60000"),
// and no limit. Stores name a key's counters by the name and each
// window, so two plans in two zones never share counters, and policies
// of one ID (a Plan's, Limiter.For) share them whatever their limits.
func (p *Policy) ID() string { return p.id }

// sameUsage reports whether p and q count into the same counters: the
// same ID, whatever their limits (For).
func (p *Policy) sameUsage(q *Policy) bool { return p != nil && q != nil && p.uid == q.uid }

// String returns a readable form, such as "api: 100/1m0s + 5/1s" or
// "plan: 1000000/month@Europe/Paris + 600/1m0s".
func (p *Policy) String() string {
	if p != nil && p.inFlight > 0 {
		return p.name + ": " + strconv.FormatInt(p.inFlight, 10) + " in flight"
	}
	if p == nil || len(p.rates) == 0 {
		return "<invalid policy>"
	}
	var b strings.Builder
	b.WriteString(p.name)
	b.WriteString(": ")
	for i, r := range p.rates {
		if i > 0 {
			b.WriteString(" + ")
		}
		b.WriteString(r.String())
	}
	return b.String()
}

func (p *Policy) check() error {
	if p != nil && p.inFlight > 0 {
		return fmt.Errorf("%w: policy %q is an in-flight cap's (NewInFlight), which has no rates", ErrInvalidPolicy, p.name)
	}
	if p == nil || len(p.rates) == 0 {
		return fmt.Errorf("%w: nil or zero Policy; build one with NewPolicy", ErrInvalidPolicy)
	}
	return nil
}
