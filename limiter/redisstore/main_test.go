package redisstore

import (
	"fmt"
	"os"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
	"github.com/fixedwindow/ratelimit/internal/redistest"
)

// TestMain stops the Cluster the package's tests share, then fails the
// package if a goroutine (a batch loop, a proxy pipe) outlives the tests.
// go-redis's prober of a pool whose server died (one dial a second, until
// it connects or notices its pool closed) is the client's, not the
// store's: a test that kills a server for good leaves one behind for up
// to a second.
func TestMain(m *testing.M) {
	code := m.Run()
	redistest.StopSharedCluster()
	if code == 0 {
		if err := leakcheck.Find(leakcheck.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial")); err != nil {
			fmt.Fprintf(os.Stderr, "leakcheck: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}
