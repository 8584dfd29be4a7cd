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
	// ErrMisconfigured reports, in the error an observer and the error
	// handler get, a request that met a setting the server got wrong
	// and that no constructor could see: a plan (WithPlans) that cannot
	// apply (none, limits that do not fit a policy, an unknown zone).
	// Such a request is answered 500 and
	// reported as Misconfigured, never a panic. A handler's Report in a
	// unit no limit around it counts (a misspelt "acme-tokenz") is
	// reported so too. (A key function installed where it cannot work
	// wraps keyfunc.ErrMisconfigured.)
	ErrMisconfigured = errors.New("middleware: misconfigured")
)

// errEmptyKey is what a key function that returned "" without an error is
// taken to mean: the key could not be resolved. It wraps keyfunc.ErrNoKey.
var errEmptyKey = fmt.Errorf("middleware: key function returned an empty key: %w", keyfunc.ErrNoKey)
