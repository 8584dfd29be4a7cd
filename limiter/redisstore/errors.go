package redisstore

import (
	"errors"
	"fmt"
)

// Errors returned by this package. A decision that Redis could not make
// (unreachable, too slow, breaker open) wraps both ErrUnavailable and the
// cause, so callers can test for either with errors.Is.
var (
	// ErrUnavailable reports that Redis could not decide in time and the
	// failure policy is FailClosed. The middleware answers it with a 500
	// and a generic body (a custom ErrorHandler may prefer 503 with
	// Retry-After), or admits the request with its own fail-open option.
	ErrUnavailable = errors.New("redisstore: redis unavailable")
	// ErrNilClient reports a nil client passed to New. It wraps
	// ErrInvalidOption, as every configuration error of New does.
	ErrNilClient = fmt.Errorf("%w: client is nil", ErrInvalidOption)
	// ErrContextTimeout reports a client built without
	// ContextTimeoutEnabled: its socket reads ignore deadlines, so no
	// decision could be bounded in time.
	// It wraps ErrInvalidOption.
	ErrContextTimeout = fmt.Errorf("%w: client must set ContextTimeoutEnabled so that decisions are bounded in time", ErrInvalidOption)
	// ErrInvalidOption reports an option with a value out of range.
	ErrInvalidOption = errors.New("redisstore: invalid option")
	// ErrBadReply reports a script reply that does not have the expected
	// shape, or whose verdict disagrees with limiter.Decide. Either means a
	// foreign script shares the name space or a bug: it is never a denial.
	ErrBadReply = errors.New("redisstore: unexpected script reply")
	// ErrCorruptValue reports, in an Event to the observer, a value in
	// Redis that the store did not write (not a plain decimal count, a
	// malformed window id, a value of another type). The key is refused
	// until the value expires or is deleted; it is never an error of the
	// decision, so FailOpen never admits because of it.
	ErrCorruptValue = errors.New("redisstore: corrupt value")
)
