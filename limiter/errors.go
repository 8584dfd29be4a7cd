package limiter

import "errors"

// Errors returned by this package. Policy errors wrap ErrInvalidPolicy with
// the detail of what is wrong.
var (
	// ErrInvalidPolicy reports a policy that cannot be enforced.
	ErrInvalidPolicy = errors.New("limiter: invalid policy")
	// ErrInvalidCost reports a cost of zero or less.
	ErrInvalidCost = errors.New("limiter: cost must be > 0")
	// ErrInvalidKey reports an empty key. Empty keys are refused rather
	// than pooled, so that clients whose identity could not be resolved
	// never share one bucket by accident.
	ErrInvalidKey = errors.New("limiter: key must not be empty")
	// ErrClosed reports a call on a closed store or limiter.
	ErrClosed = errors.New("limiter: closed")
)
