// Package fakeclock is a settable clock for tests and simulations, so that
// crossing a window never needs a sleep.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a clock that moves only when told. It is safe for concurrent
// use. The zero Clock reads the zero time.
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

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
