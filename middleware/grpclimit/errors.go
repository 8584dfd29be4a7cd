package grpclimit

import (
	"errors"
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/keyform"
	"github.com/fixedwindow/ratelimit/keyfunc"
)

// Errors returned by this package.
var (
	// ErrInvalidOption reports a bad argument to New, to one of its
	// options or to a key function's constructor; the wrapping error
	// says which.
	ErrInvalidOption = errors.New("grpclimit: invalid option")
)

// The key functions of this package report a call without a usable key
// with keyfunc.ErrNoKey and a key function that cannot work where it is
// installed with keyfunc.ErrMisconfigured, as keyfunc's do, so that one
// errors.Is serves both doors.
var rules = keyform.Rules{Prefix: "grpclimit", NoKey: keyfunc.ErrNoKey, Misconfigured: keyfunc.ErrMisconfigured}

// errEmptyKey is what a key function that returned "" without an error is
// taken to mean: the key could not be resolved.
var errEmptyKey = fmt.Errorf("grpclimit: key function returned an empty key: %w", keyfunc.ErrNoKey)
