// Package calendar holds the arithmetic of calendar windows: a day, an
// ISO week or a month in a time zone, whose boundaries are the local
// midnights of the zone. The limiter's decision rule and its stores share
// it, as they share package window for windows of a fixed length.
//
// A window of date D starts at the first instant whose wall clock in the
// zone reads D at 00:00 or later: local midnight, or where midnight does
// not exist (clocks that spring forward at 00:00) the first instant after
// it, the moment of the change. It ends where the next one starts, so the
// windows of a zone are contiguous and never overlap, whatever its clocks
// do; a date the zone skipped (Samoa's 30 December 2011) has an empty
// window that no instant falls in.
//
// Everything goes through the zone's own rules (time.Date, Time.In,
// Time.ZoneBounds), never by adding 24 hours: a day lasts 23, 24 or 25
// hours, or another length where a zone moved its clocks by more.
package calendar

import (
	"math"
	"sync/atomic"
	"time"
)

// A Period is the length of a calendar window.
type Period uint8

// The periods.
const (
	Day   Period = iota + 1 // from one local midnight to the next
	Week                    // an ISO week: from Monday 00:00 local to the next
	Month                   // from the 1st at 00:00 local to the next 1st
)

// String returns "day", "week" or "month".
func (p Period) String() string {
	switch p {
	case Day:
		return "day"
	case Week:
		return "week"
	case Month:
		return "month"
	}
	return "invalid"
}

// PeriodOf returns the period String names, 0 for another name.
func PeriodOf(name string) Period {
	for _, p := range []Period{Day, Week, Month} {
		if p.String() == name {
			return p
		}
	}
	return 0
}

// Nominal returns the usual length of a window of period p, in ms: a day
// of 24 hours, a week of 7 days, a month of 28 days (the shortest). The
// limiter orders windows by it (a tie goes to the longer) and bounds by it
// a window found ahead of a request's instant (a racing clock read, or a
// clock stepped back); the windows themselves come from Window.
func Nominal(p Period) int64 {
	day := int64(24 * time.Hour / time.Millisecond)
	switch p {
	case Week:
		return 7 * day
	case Month:
		return 28 * day
	}
	return day
}

// maxOffset bounds the zone offsets start assumes without looking: every
// zone of the tz database keeps within ±16 hours (local mean times before
// 1900 included) and a POSIX TZ rule within ±25. An offset larger than
// that, which only time.FixedZone can make, is found and allowed for.
const maxOffset = 26 * 3600

// Window returns the bounds [start, end), in Unix milliseconds, of the
// window of period p in loc that holds the instant ms: start ≤ ms < end.
func Window(ms int64, p Period, loc *time.Location) (start, end int64) {
	y, m, d := first(time.UnixMilli(ms).In(loc), p)
	mid := wall(y, m, d)
	s, off, spanEnd := begin(mid, loc)
	for {
		y, m, d = next(y, m, d, p)
		next := wall(y, m, d)
		// The next window starts in the span of s when its midnight
		// is in it (no clock change between them), as it nearly always
		// is; else the walk starts again.
		e := next - off
		if e < s || e >= spanEnd {
			e, off, spanEnd = begin(next, loc)
		}
		// The wall clock can move back across a boundary (a zone that
		// falls back from 00:30 to 23:30): an instant that reads the
		// day before may lie after that day's successor has started.
		// Windows are cut at the starts, so such an instant belongs to
		// the later window.
		if ms < e*1000 {
			return s * 1000, e * 1000
		}
		s = e
	}
}

// first returns the date of the first day of t's period, by its wall
// clock.
func first(t time.Time, p Period) (int, time.Month, int) {
	y, m, d := t.Date()
	switch p {
	case Week:
		// Back to Monday (time.Date normalises the day): the weekday of
		// the date, in no zone, costs no second zone lookup.
		d -= (int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) + 6) % 7
	case Month:
		d = 1
	}
	return y, m, d
}

// next returns the date on which the period that starts on y-m-d ends,
// normalised (as time.Date normalises: the 32nd of January is the 1st of
// February). It is date arithmetic, in no zone.
func next(y int, m time.Month, d int, p Period) (int, time.Month, int) {
	switch p {
	case Day:
		d++
	case Week:
		d += 7
	case Month:
		m++
	}
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Date()
}

// wall returns midnight of the date y-m-d on a wall clock, as the Unix
// seconds of that reading in UTC.
func wall(y int, m time.Month, d int) int64 {
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix()
}

// Start returns, in Unix milliseconds, the first instant whose wall clock
// in loc reads the date y-m-d (normalised as time.Date does) at 00:00 or
// later. time.Date alone does not say: for a midnight that does not
// exist it may answer an instant of the day before.
func Start(y int, m time.Month, d int, loc *time.Location) int64 {
	s, _, _ := begin(wall(y, m, d), loc)
	return s * 1000
}

// begin returns, in Unix seconds, the first instant whose wall clock in
// loc reads mid (a wall reading, as wall gives it) or later, with the
// offset there and the end of the span of that offset (math.MaxInt64
// when the offset never changes again).
//
// The walk starts from an instant whose wall clock reads before mid
// (maxOffset before it, earlier for a larger fixed offset), and goes
// forward span by span (Time.ZoneBounds): within a span of offset o the
// wall clock reads mid or later from mid − o on, so the answer is the
// first span where that instant is not past the span's end.
func begin(mid int64, loc *time.Location) (s, off, spanEnd int64) {
	t := mid - maxOffset
	for tries := 0; ; {
		at := time.Unix(t, 0).In(loc)
		_, o := at.Zone()
		off = int64(o)
		if tries < 4 && t+off >= mid {
			// An offset beyond maxOffset (a fixed zone): start again
			// from before midnight at that offset.
			t = mid - off - maxOffset
			tries++
			continue
		}
		tries = 4 // t reads before mid: walk on from here
		s = max(t, mid-off)
		_, to := at.ZoneBounds()
		if to.IsZero() {
			return s, off, math.MaxInt64
		}
		spanEnd = spanEndAfter(t, to.Unix())
		if s < spanEnd {
			return s, off, spanEnd
		}
		t = spanEnd
	}
}

// spanEndAfter returns where the span of one offset that holds t ends,
// given end from Time.ZoneBounds. ZoneBounds may report the end of a year
// as an end where the offset does not change, which costs the walk a step
// and nothing else; but in the last UTC day of a leap year that a zone's
// TZ rule covers (after its last listed change), it reports the start of
// that day, before t (Go issue 81583: the year is taken to last 365
// days). The year really ends at the next UTC midnight, where the walk
// goes on.
func spanEndAfter(t, end int64) int64 {
	if end > t {
		return end
	}
	return (floorDiv(t, 86400) + 1) * 86400
}

// floorDiv returns a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// A Span is three consecutive windows of one period: [Prev, Start),
// [Start, Next) and [Next, End), in Unix milliseconds.
type Span struct{ Prev, Start, Next, End int64 }

// Around returns the window of period p in loc that holds ms, with the
// window before it and the one after.
func Around(ms int64, p Period, loc *time.Location) Span {
	start, end := Window(ms, p, loc)
	prev, _ := Window(start-1, p, loc)
	_, after := Window(end, p, loc)
	return Span{Prev: prev, Start: start, Next: end, End: after}
}

// A Cache remembers a window of one period in one location, with its
// neighbours, so that the instants of that window, and of the one before
// it, find their bounds with a few comparisons instead of time-zone
// arithmetic. It is safe for concurrent use. The zero Cache is not
// usable: call NewCache.
type Cache struct {
	period Period
	loc    *time.Location
	latest atomic.Pointer[Span]
}

// NewCache returns a cache of the windows of period p in loc.
func NewCache(p Period, loc *time.Location) *Cache {
	return &Cache{period: p, loc: loc}
}

// Window returns the bounds of the window holding ms, as Window does.
func (c *Cache) Window(ms int64) (start, end int64) {
	if s := c.latest.Load(); s != nil {
		switch {
		case ms >= s.Start && ms < s.Next:
			return s.Start, s.Next
		case ms >= s.Prev && ms < s.Start:
			return s.Prev, s.Start
		}
	}
	s := c.Around(ms)
	return s.Start, s.Next
}

// Around returns the windows around ms, as Around does, and keeps them
// for the instants that follow. An instant of the window after the one
// kept moves the cache on by one window, computing only the window after
// it. An instant of the window before is a clock read a moment before
// another, across the boundary: it is answered and the cache stays, so
// that racing readers cannot make it flap. Any other instant (a clock
// stepped by more than a window, either way) moves the cache to it.
func (c *Cache) Around(ms int64) Span {
	old := c.latest.Load()
	if old != nil {
		switch {
		case ms >= old.Start && ms < old.Next:
			return *old
		case ms >= old.Prev && ms < old.Start:
			prev, _ := Window(old.Prev-1, c.period, c.loc)
			return Span{Prev: prev, Start: old.Prev, Next: old.Start, End: old.Next}
		case ms >= old.Next && ms < old.End:
			_, after := Window(old.End, c.period, c.loc)
			s := Span{Prev: old.Start, Start: old.Next, Next: old.End, End: after}
			c.latest.CompareAndSwap(old, &s)
			return s
		}
	}
	s := Around(ms, c.period, c.loc)
	c.latest.CompareAndSwap(old, &s)
	return s
}
