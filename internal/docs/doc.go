// Package docs keeps the Go blocks of README.md and docs/*.md building. It
// has no code of its own, only tests:
//
//	go test ./internal/docs
//
// Every block fenced as go is either a complete program (package main),
// which must pass go build and go vet, or starts with a line
//
//	// Mirrors ExampleX in path/to/x_test.go.
//
// naming a runnable Example that must exist and hold every line of the
// block, so that the page shows code that is compiled and run by go test,
// or starts with a line
//
//	// Copy of path/to/main.go.
//
// and then is the whole of that file, a program of a module of its own
// (example/observe) that make test builds and vets there. A fragment
// that is none of these belongs in a fence without go.
//
// README.md stays a front page: at most 12 KB, linking every file of docs/.
// Every relative link of README.md, SECURITY.md and docs/*.md resolves:
// its file exists, and its anchor names a heading (TestRelativeLinks).
package docs
