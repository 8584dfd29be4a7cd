package limiter

import "time"

// A Clock tells the time. The limiter reads it exactly once per decision.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock. The zero value is ready to use.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }
