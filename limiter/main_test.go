package limiter

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if any goroutine (a store's sweep, say)
// outlives the tests.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m)
}
