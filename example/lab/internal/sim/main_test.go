package sim

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if any goroutine outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
