package middleware_test

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine (a test server, a client
// connection, a store's sweep) outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
