package middleware

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine outlives its tests: the
// contenders' own background work must be stopped too. ulule/limiter's
// memory store offers no way to stop its cleaner (a finalizer stops it
// once the store is collected), so that one goroutine is let through.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m,
		leakcheck.IgnoreTopFunction("github.com/ulule/limiter/v3/drivers/store/memory.(*cleaner).Run"))
}
