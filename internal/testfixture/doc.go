// Package testfixture reads the fixtures under the repository's top-level
// testdata/, which the tests of more than one package replay: traffic
// patterns (testdata/traffic, read by the limiter's tests and the lab's
// simulator) and header scenarios (testdata/headers, read by the headers
// and middleware tests). One reader, so that every package sees a fixture
// alike; each package's test states what it checks against it.
//
// Of this module it imports only limiter and limiter/limitertest (header
// scenarios build decisions), so limiter's tests use it from their
// external test package, and every other package's tests from anywhere.
package testfixture
