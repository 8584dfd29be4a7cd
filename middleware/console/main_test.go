package console_test

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine (a stream, a test server, a
// Redis connection) outlives the tests. go-redis's pool keeps redialling
// a server that refused it for a moment after Close, as in redisstore's
// tests.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m,
		leakcheck.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
