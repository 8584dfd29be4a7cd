package redisstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine (a batch loop, a proxy pipe)
// outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
