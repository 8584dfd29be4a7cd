package sim

import (
	"fmt"
	"time"
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
type Config struct {
	Limit  int64
	Window time.Duration
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
	}
	return nil
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
