package middleware

import (
	"errors"
	"fmt"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

// Errors returned by this package.
var (
	// ErrInvalidOption reports a bad argument to New or to one of its
	// options; the wrapping error says which.
	ErrInvalidOption = errors.New("middleware: invalid option")
)

// errEmptyKey is what a key function that returned "" without an error is
// taken to mean: the key could not be resolved. It wraps keyfunc.ErrNoKey.
var errEmptyKey = fmt.Errorf("middleware: key function returned an empty key: %w", keyfunc.ErrNoKey)
