package limiter

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (a store's sweep, say)
// outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
