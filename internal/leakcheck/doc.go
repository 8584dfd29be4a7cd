// Package leakcheck fails a test binary, or a test, that leaves a
// goroutine running. It keeps the library's goroutine checks without a
// requirement in the root go.mod that every consumer's module graph would
// see (go.uber.org/goleak, which this package replaces call for call).
//
// A package's tests check at the end of the binary:
//
//	func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }
//
// and a test that must leave nothing behind of its own:
//
//	defer leakcheck.VerifyNone(t, leakcheck.IgnoreCurrent())
//
// A goroutine counts as leaked unless it is the caller, or belongs to the
// runtime, to the testing package (a parent test waiting in Run, a
// parallel test waiting its turn) or to os/signal, or an Option ignores
// it. A goroutine that is on its way out gets about 0.4 s (20 tries, the
// waits doubling from 1 µs to at most 100 ms) before it counts.
package leakcheck
