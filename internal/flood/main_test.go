package flood

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine (a store's batch loop, a Redis
// connection) outlives the tests. go-redis's dial prober is the client's.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m,
		leakcheck.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
