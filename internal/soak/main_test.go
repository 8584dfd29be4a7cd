package soak

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine (a replica's server, a client
// connection, a Redis connection or batch) outlives the soak.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
