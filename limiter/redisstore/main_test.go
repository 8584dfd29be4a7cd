package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine (a batch loop, a proxy pipe)
// outlives the tests. go-redis's prober of a pool whose server died (one
// dial a second, until it connects or notices its pool closed) is the
// client's, not the store's: a test that kills a server for good leaves
// one behind for up to a second.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
