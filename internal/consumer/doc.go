// Package consumer tests the library as a consumer sees it, from a module
// of its own, so that what those tests need stays out of the root go.mod
// and out of every consumer's module graph. It has no code, only tests:
//
//	cd internal/consumer && go test ./...
//
// sfv_test.go reads the draft RateLimit fields with another
// implementation of RFC 9651 (github.com/dunglas/httpsfv); graph_test.go
// builds a scratch module that requires only the root module and fails
// on a requirement in its module graph that docs/development.md does not
// justify.
package consumer
