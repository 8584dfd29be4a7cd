package limitertest

import (
	"sync"
	"time"
)

// Clock is a limiter.Clock that moves only when told: Set and Advance move
// it, Now reads it. It is safe for concurrent use, so a test may move it
// while handlers read it. The zero Clock reads the zero time; New starts
// one at a given instant.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a clock reading t.
func New(t time.Time) *Clock { return &Clock{now: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t, forwards or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Advance moves the clock by d (back if d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
