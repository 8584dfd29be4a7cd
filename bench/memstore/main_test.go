package memstore

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: the
// contenders' own background work must be stopped too.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
