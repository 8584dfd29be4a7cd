package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Errors returned by this package. A decision that Redis could not make
// (unreachable, too slow, an error reply, breaker open) wraps both
// ErrUnavailable and the cause, so callers can test for either with
// errors.Is. The cause has a method Reason() string that names it:
// "out_of_memory" (Redis answered OOM), "permission_denied" (NOPERM, or
// an ACL refusal inside the script), "auth" (WRONGPASS, NOAUTH: the
// client's credentials), "read_only", "loading", "busy", "cluster_down",
// "master_down", "no_replicas", "try_again", "error_reply" (another error
// reply); for a server that could not be reached, "connection_refused",
// "no_route", "dns" (the name does not resolve), "tls" (the handshake or
// the certificate failed) or "connect_timeout", each named by the dials
// that failed during the decision even when its time ran out first
// (go-redis dials again with backoff), "timeout" (no answer in time,
// with no failed dial to blame; its text names the server that kept the
// call waiting, where the call went to one) and "unavailable" (another network
// error); "circuit_open"; and "clock_skew" (Redis's clock outside the
// calendar windows a replica sent, WithServerClock). Its text says the same, then the error it
// wraps: "connection refused: dial tcp 127.0.0.1:6379: connect:
// connection refused (no connection within the timeout: context deadline
// exceeded)". Package middleware/reason reads it (reason.Of), as the
// metrics adapters do.
var (
	// ErrUnavailable reports that Redis could not decide in time, from a
	// store built without WithFailOpen or WithFailLocal. The middleware
	// answers it with a 500 and a generic body (a
	// middleware.WithErrorHandler may prefer 503 with Retry-After), or
	// admits the request with its own fail-open option.
	ErrUnavailable = errors.New("redisstore: redis could not decide")
	// ErrCircuitOpen reports a decision refused by the breaker of the
	// server it belongs to, open after that server kept failing: nothing
	// was sent.
	ErrCircuitOpen error = &reasonError{"circuit_open", errors.New("redisstore: circuit breaker open")}
	// ErrClockSkew reports a decision under WithServerClock that Redis
	// could not place in a window of a calendar rate (a day, a week or
	// a month in a zone): Lua has no time zones, so the replica sends the
	// windows around its estimate of Redis's clock (the one it is in, the
	// one before and the one after), and Redis's TIME lay outside them
	// all twice: once around the replica's own clock, and once more
	// around the TIME that first answer carried (see WithServerClock).
	// Nothing was charged, and no count is ever kept under a window
	// Redis's clock is not in. It wraps in ErrUnavailable, as any
	// decision Redis could not make, and its reason is "clock_skew".
	ErrClockSkew error = &reasonError{"clock_skew", errors.New("redisstore: redis's clock is outside the calendar windows around this replica's")}
	// errNilClient reports a nil client passed to New. It wraps
	// ErrInvalidOption, as every configuration error of New does.
	errNilClient = fmt.Errorf("%w: client is nil", ErrInvalidOption)
	// errContextTimeout reports a client built without
	// ContextTimeoutEnabled: its socket reads ignore deadlines, so no
	// decision could be bounded in time.
	// It wraps ErrInvalidOption.
	errContextTimeout = fmt.Errorf("%w: client must set ContextTimeoutEnabled so that decisions are bounded in time", ErrInvalidOption)
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
	// decision, so WithFailOpen never admits because of it.
	ErrCorruptValue = errors.New("redisstore: corrupt value")
)

// A reasonError is a failure named for what it is; Reason returns it.
type reasonError struct {
	reason string
	err    error
}

func (e *reasonError) Error() string  { return e.err.Error() }
func (e *reasonError) Unwrap() error  { return e.err }
func (e *reasonError) Reason() string { return e.reason }

// replyPhrases name the error replies by their code.
var replyPhrases = map[string]string{
	"OOM": "out of memory", "NOPERM": "permission denied", "READONLY": "read only",
	"LOADING": "loading", "BUSY": "busy", "CLUSTERDOWN": "cluster down",
	"MASTERDOWN": "master down", "NOREPLICAS": "no replicas", "TRYAGAIN": "try again",
	"WRONGPASS": "auth", "NOAUTH": "auth",
}

// named returns err, a failed script call, named for what it is: the
// code of an error reply, a timeout, or a network error.
func named(err error) error {
	var (
		r  *reasonError
		re redis.Error
		ne net.Error
	)
	phrase := "unavailable"
	switch {
	case errors.As(err, &r):
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		phrase = "timeout"
	case errors.As(err, &ne):
		phrase = phraseOf(dialReason(err)) // a dial that failed at once
	case errors.As(err, &re):
		code, _, _ := strings.Cut(re.Error(), " ")
		switch phrase = replyPhrases[code]; {
		case phrase != "":
		case strings.Contains(re.Error(), "user executing the script can't run"):
			phrase = "permission denied" // an ACL refusal inside a script
		default:
			phrase = "error reply"
		}
	}
	return &reasonError{strings.ReplaceAll(phrase, " ", "_"), fmt.Errorf("%s: %w", phrase, err)}
}

// clockSkew returns the error of a request decided by Redis's clock
// that the script could not place in its calendar windows, sent around
// the replica's estimate of Redis's clock at now, the replica's own.
func clockSkew(now time.Time, r result) error {
	return &reasonError{"clock_skew", fmt.Errorf("%w: redis's TIME %v, this replica's clock %v",
		ErrClockSkew, time.Unix(r.sec, r.usec*1000).UTC(), now.UTC())}
}

// circuitOpen returns the error of a call d's open breaker refused.
func circuitOpen(d *dest, err error) error {
	return &reasonError{"circuit_open", fmt.Errorf("%w (%s): %w", ErrCircuitOpen, d.name, err)}
}
