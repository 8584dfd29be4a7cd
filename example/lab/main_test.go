package main

import (
	"testing"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine (a served agent, a hammer worker,
// a store's sweep) outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
