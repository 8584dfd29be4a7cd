package main

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine (a served agent, a hammer worker,
// a store's sweep) outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
