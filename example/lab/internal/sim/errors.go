package sim

import (
	"errors"
	"fmt"
)

// Errors returned by this package.
var (
	// ErrInvalidConfig reports a limit or window the simulator cannot run.
	ErrInvalidConfig = errors.New("sim: invalid configuration")
	// ErrUnknownLimiter reports a limiter name not in Names.
	ErrUnknownLimiter = errors.New("sim: unknown limiter")
	// ErrEmptyPattern reports a pattern with no request.
	ErrEmptyPattern = errors.New("sim: pattern has no requests")
	// ErrPatternTooLarge reports a pattern of more than MaxRequests
	// requests, or with a line longer than maxLine bytes.
	ErrPatternTooLarge = errors.New("sim: pattern too large")
)

// A ParseError reports a malformed line of a pattern. Its text reads like a
// compiler's, "name:line: problem", so that editors can jump to the line.
type ParseError struct {
	Name string // the pattern's name, usually its file path
	Line int    // 1-based
	Err  error
}

// Error returns "name:line: problem".
func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.Name, e.Line, e.Err) }

// Unwrap returns the underlying problem.
func (e *ParseError) Unwrap() error { return e.Err }
