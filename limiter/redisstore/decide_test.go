package redisstore

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestMatchesMemoryStore replays random traffic against the in-memory
// store and the Redis store, through rounds and the Plain path, with one
// fake clock, and wants identical decisions, settles, refunds, resets and
// slots: both apply limiter.Decide. The miniredistest module runs the
// same suite on miniredis.
func TestMatchesMemoryStore(t *testing.T) {
	c := sharedClient(t)
	for _, mode := range []path{pathBatch, pathPlain} {
		t.Run(mode.String(), func(t *testing.T) {
			storetest.RunMatchesMemory(t, func(t *testing.T, _ limiter.Clock) limiter.Store {
				return newStore(t, c, withPath(mode))
			})
		})
	}
}
