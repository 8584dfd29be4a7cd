package sim

import (
	"fmt"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Bounds of a Config. They keep every reference model's arithmetic within
// int64: the token bucket counts in token·nanoseconds, up to
// MaxLimit × MaxWindow = 8.64e18 < 2^63.
const (
	MaxLimit  = 100_000
	MinWindow = time.Millisecond
	MaxWindow = 24 * time.Hour
)

// A Config is the rate every limiter of a simulation enforces: Limit
// requests per Window, per key. The zero Config is invalid.
//
// With Calendar set ("day", "week" or "month"), the module's limiters
// count Limit per day, ISO week or month of Zone instead, from its local
// midnights: fixed-window alone, layered with its short window of
// Window/5 under it. Window is then the span of the table's worst column
// and the length the short window is cut from. The reference models have
// no calendar (New refuses them).
type Config struct {
	Limit  int64
	Window time.Duration
	// Start is the instant a pattern's 0 s stands for; the zero Time is
	// the Unix epoch. A pattern replayed from 23:59:59 in a zone crosses
	// its midnight one second in.
	Start    time.Time
	Calendar string
	Zone     *time.Location
}

// Validate reports a config the simulator cannot run, wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case c.Limit < 1 || c.Limit > MaxLimit:
		return fmt.Errorf("%w: limit %d must be in [1, %d]", ErrInvalidConfig, c.Limit, MaxLimit)
	case c.Window < MinWindow || c.Window > MaxWindow:
		return fmt.Errorf("%w: window %v must be in [%v, %v]", ErrInvalidConfig, c.Window, MinWindow, MaxWindow)
	case c.Window%time.Millisecond != 0:
		return fmt.Errorf("%w: window %v is not a whole number of milliseconds", ErrInvalidConfig, c.Window)
	case c.Calendar != "" && c.Zone == nil:
		return fmt.Errorf("%w: calendar %q needs a zone", ErrInvalidConfig, c.Calendar)
	}
	if _, err := c.longRate(); err != nil {
		return err
	}
	return nil
}

// Calendars are the periods a Config's Calendar may name.
func Calendars() []string { return []string{"day", "week", "month"} }

// longRate returns the module limiters' rate: Limit per Window, or per
// day, week or month of Zone.
func (c Config) longRate() (limiter.Rate, error) {
	switch c.Calendar {
	case "":
		return limiter.Rate{Limit: c.Limit, Window: c.Window}, nil
	case "day":
		return limiter.PerDayIn(c.Limit, c.Zone), nil
	case "week":
		return limiter.PerWeekIn(c.Limit, c.Zone), nil
	case "month":
		return limiter.PerMonthIn(c.Limit, c.Zone), nil
	}
	return limiter.Rate{}, fmt.Errorf("%w: calendar %q is none of %v", ErrInvalidConfig, c.Calendar, Calendars())
}

// base returns the instant of a pattern's 0 s.
func (c Config) base() time.Time {
	if c.Start.IsZero() {
		return time.Unix(0, 0)
	}
	return c.Start
}

// perLong reads the long rate's unit: "second", "2s", "day in
// Europe/Paris".
func (c Config) perLong() string {
	if c.Calendar != "" {
		return c.Calendar + " in " + c.Zone.String()
	}
	return per(c.Window)
}

// ShortDuration formats d without the zero units Go's Duration.String
// keeps: "1s", "1m", "1h30m", "250ms".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if len(s) > 2 && s[len(s)-2:] == "0s" && (s[len(s)-3] == 'm' || s[len(s)-3] == 'h') {
		s = s[:len(s)-2]
	}
	if len(s) > 2 && s[len(s)-2:] == "0m" && s[len(s)-3] == 'h' {
		s = s[:len(s)-2]
	}
	return s
}

// per reads a window as a unit: "second", "minute", "hour", else "2s",
// "250ms".
func per(d time.Duration) string {
	switch d {
	case time.Second:
		return "second"
	case time.Minute:
		return "minute"
	case time.Hour:
		return "hour"
	}
	return ShortDuration(d)
}
