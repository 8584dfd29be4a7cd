package limiter

import (
	"fmt"
	"hash/fnv"
	"time"

	"github.com/fixedwindow/ratelimit/internal/calendar"
	"github.com/fixedwindow/ratelimit/internal/window"
)

// PerDayIn returns a Rate of n per day in loc: its windows start at
// every local midnight of loc (see Rate for days that have none) and
// last 23, 24 or 25 hours as the zone's clocks change.
func PerDayIn(n int64, loc *time.Location) Rate { return calendarRate(n, calendar.Day, loc) }

// PerWeekIn returns a Rate of n per ISO week in loc: its windows start
// on every Monday at 00:00 in loc.
func PerWeekIn(n int64, loc *time.Location) Rate { return calendarRate(n, calendar.Week, loc) }

// PerMonthIn returns a Rate of n per calendar month in loc: its windows
// start on the 1st of every month at 00:00 in loc, and last 28 to 31 days.
func PerMonthIn(n int64, loc *time.Location) Rate { return calendarRate(n, calendar.Month, loc) }

func calendarRate(n int64, p calendar.Period, loc *time.Location) Rate {
	return Rate{Limit: n, period: p, loc: loc}
}

// Calendar reports the period ("day", "week" or "month") and the
// location of a calendar rate (PerDayIn, PerWeekIn, PerMonthIn); ok is
// false for a rate of a fixed Window.
func (r Rate) Calendar() (period string, loc *time.Location, ok bool) {
	if r.period == 0 {
		return "", nil, false
	}
	return r.period.String(), r.loc, true
}

// maxZoneName bounds the name of a calendar rate's location, which
// becomes part of the policy's ID and so of storage keys.
const maxZoneName = 64

// validateCalendar checks a calendar rate: a location whose name says
// which zone it is, no Window, and a limit from 1 to MaxLimit.
//
// The exact-integer rule of fixed windows (limit × window in ms ≤ 2^53)
// does not apply: no arithmetic of the library multiplies a limit by a
// window's length. Counts never exceed their limit (a request is charged
// only when count ≤ limit − cost), the Redis scripts compare and add
// counts, costs and limits as Lua numbers, exact below 2^53, and MaxLimit
// is below 2^50; window starts and ends, in milliseconds, are below 2^53
// until the year 287,396. So a calendar rate's limit is bounded by
// MaxLimit alone: 999,999,999,999,999 a month as much as a day.
func (r Rate) validateCalendar() error {
	switch name := zoneName(r.loc); {
	case r.loc == nil:
		return fmt.Errorf("location is nil")
	case r.Window != 0:
		return fmt.Errorf("a calendar rate has no Window (got %v): its windows are the %ss of its location", r.Window, r.period)
	case name == "Local":
		return fmt.Errorf("location %q is the machine's own zone, which replicas may not share: load the zone by name, as time.LoadLocation(\"Europe/Paris\")", name)
	case name == "" || len(name) > maxZoneName:
		return fmt.Errorf("location name %q must be 1 to %d characters: it names the zone in the policy's ID", name, maxZoneName)
	case r.Limit <= 0:
		return fmt.Errorf("limit %d must be > 0", r.Limit)
	case r.Limit > MaxLimit:
		return fmt.Errorf("limit %d exceeds MaxLimit %d, the largest structured-field Integer", r.Limit, MaxLimit)
	}
	name := r.loc.String()
	for i := 0; i < len(name); i++ {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '+' || c == '.' || c == '/'
		if !ok {
			return fmt.Errorf("location name %q has character %q (allowed: A-Z a-z 0-9 and _-+./, as in the tz database's names)", name, c)
		}
	}
	return nil
}

// zoneName returns loc's name, "<nil>" for a nil location.
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "<nil>"
	}
	return loc.String()
}

// calendarName returns "day@Europe/Paris": the period and the zone, which
// name a calendar rate's windows in the policy's ID and in storage.
func (r Rate) calendarName() string { return r.period.String() + "@" + zoneName(r.loc) }

// windowName names a rate's windows in errors: "1s", "day@Europe/Paris".
func (r Rate) windowName() string {
	if r.period != 0 {
		return r.calendarName()
	}
	return r.Window.String()
}

// calendarSpan returns the span of a calendar rate: maxID −1, so that
// Decide's test of a stored id by multiplication never passes and the
// window comes from the cache; and as the memory store's table key, a
// negative number no fixed window's length can equal, from a hash of the
// period and the zone's name (two names share a table only if their
// 63-bit hashes collide, as two client keys share a counter only if
// theirs do).
func calendarSpan(r Rate) span {
	h := fnv.New64a()
	h.Write([]byte(r.calendarName()))
	return span{
		ms:      calendar.Nominal(r.period),
		maxID:   -1,
		perUnit: maxSpent / float64(r.Limit),
		key:     -int64(h.Sum64()>>1) - 1,
		cal:     calendar.NewCache(r.period, r.loc),
		name:    r.calendarName(),
		label:   r.calendarName(),
	}
}

// windowID returns the id of the span's window that holds ms: the
// window's start for a calendar rate.
func (sp *span) windowID(ms int64) int64 {
	id, _ := sp.window(ms)
	return id
}

// windowEnd returns the end (Unix ms) of the span's window that holds ms.
func (sp *span) windowEnd(ms int64) int64 {
	_, end := sp.window(ms)
	return end
}

// window returns the id and the end of the span's window that holds ms.
func (sp *span) window(ms int64) (id, end int64) {
	if sp.cal != nil {
		start, end := sp.cal.Window(ms)
		return start, end
	}
	id, _, end = window.ID(ms, sp.ms)
	return id, end
}
