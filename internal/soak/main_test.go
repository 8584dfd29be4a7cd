package soak

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine (a replica's server, a client
// connection, a Redis connection or batch) outlives the soak.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
