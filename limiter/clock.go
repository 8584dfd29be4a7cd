package limiter

import "time"

// A Clock tells the time. The limiter reads it exactly once per decision.
type Clock interface {
	Now() time.Time
}

// systemClock is the wall clock, the default.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }
