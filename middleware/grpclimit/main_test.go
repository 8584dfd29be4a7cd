package grpclimit_test

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package's tests if any goroutine outlives them: a
// server, a client connection or a stream the tests forgot, or one the
// interceptor started.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
