package redisstore

import "errors"

// Errors returned by this package. A decision that Redis could not make
// (unreachable, too slow, breaker open) wraps both ErrUnavailable and the
// cause, so callers can test for either with errors.Is.
var (
	// ErrUnavailable reports that Redis could not decide in time and the
	// failure policy is FailClosed. Map it to a 503, or let the
	// middleware's own fail-open option admit the request.
	ErrUnavailable = errors.New("redisstore: redis unavailable")
	// ErrNilClient reports a nil client passed to New.
	ErrNilClient = errors.New("redisstore: client is nil")
	// ErrContextTimeout reports a client built without
	// ContextTimeoutEnabled: its socket reads ignore deadlines, so no
	// decision could be bounded in time.
	ErrContextTimeout = errors.New("redisstore: client must set ContextTimeoutEnabled so that decisions are bounded in time")
	// ErrInvalidOption reports an option with a value out of range.
	ErrInvalidOption = errors.New("redisstore: invalid option")
	// ErrBadReply reports a script reply that does not have the expected
	// shape, or whose verdict disagrees with limiter.Decide. Either means a
	// foreign script shares the name space or a bug: it is never a denial.
	ErrBadReply = errors.New("redisstore: unexpected script reply")
)
