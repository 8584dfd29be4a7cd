package metrics_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine (a test server, a client
// connection) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
