package redisstore

import (
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestAppClockSteps runs storetest.KeyedClockSteps, each row on a store with a key
// prefix of its own on the shared Redis. The steps move the limiter's
// clock, not Redis's, and a key's expiry runs on Redis's clock (the
// window's remainder plus the margin): the margin of a minute keeps every
// key of a row alive however long the row takes on a loaded machine, so
// the answers do not depend on it. serverClock's steps are
// TestServerClockSteppedBack's: Redis's TIME cannot be stepped from here.
func TestAppClockSteps(t *testing.T) {
	c := sharedClient(t)
	storetest.RunClockSteps(t, func(t *testing.T, _ limiter.Clock) limiter.Store {
		return newStore(t, c, WithExpiryMargin(time.Minute))
	}, storetest.KeyedClockSteps)
}
