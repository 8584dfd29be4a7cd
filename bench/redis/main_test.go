package redis

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine outlives its tests: the
// contenders' own background work must be stopped too.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
