package limiter

import "errors"

// Errors returned by this package. Policy errors wrap ErrInvalidPolicy and
// other constructor errors wrap ErrInvalidOption, with the detail of what
// is wrong; test with errors.Is.
var (
	// ErrInvalidPolicy reports a policy that cannot be enforced.
	ErrInvalidPolicy = errors.New("limiter: invalid policy")
	// ErrInvalidOption reports a bad argument to New, NewMemoryStore or
	// one of their options: a nil store or clock, a bound out of range.
	ErrInvalidOption = errors.New("limiter: invalid option")
	// ErrInvalidCost reports a cost of zero or less.
	ErrInvalidCost = errors.New("limiter: cost must be > 0")
	// ErrInvalidKey reports an empty key. Empty keys are refused rather
	// than pooled, so that clients whose identity could not be resolved
	// never share one bucket by accident.
	ErrInvalidKey = errors.New("limiter: key must not be empty")
	// ErrClosed reports a call on a closed store or limiter.
	ErrClosed = errors.New("limiter: closed")
	// ErrFull reports a store that cannot hold one more key's in-flight
	// slots (MemoryStore, at WithMaxKeys keys in a shard): a slot is
	// never evicted, so the request is not admitted.
	ErrFull = errors.New("limiter: store full")
)
