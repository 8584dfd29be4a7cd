package console

import (
	"net/http"
	"time"
)

// An Event is one thing asked of the console, for an audit trail: who
// asked for what, on which key, when, and whether it was done.
// Config.Observe gets one for every lookup, live view, listing (of keys,
// or of the keys limited now), reset and
// refund, done or refused, and one for every request Config.Authorize
// refused. A request for the page's script or style sheet is no event.
//
// The zero Event describes nothing.
type Event struct {
	// At is when, by the clock of the console's first limiter (or cap).
	At time.Time
	// Who is whom Config.Authorize named; empty for a request it
	// refused, but for a live view it refused later (asked again every
	// minute): then the person the stream was for, and Key its key.
	Who string
	// Action is what was asked: "lookup" (a key's usage, on the page or
	// as JSON), "watch" (the page's live updates, once per stream),
	// "list" (keys, through Config.List), "limited" (the keys limited
	// now, through Config.Refusals), "reset", "refund", or
	// "forbidden" (a request Config.Authorize refused).
	Action string
	// Key is the key acted on, or for a list the prefix asked for. It is
	// empty when the key given was refused as bad input (empty, longer
	// than 4 KiB, not UTF-8), and for a forbidden request. A change
	// refused as a forgery (another origin, no token, a GET) names the
	// key it aimed at.
	Key string
	// Policy and Amount are a refund's: the limiter's policy name and
	// the units asked back.
	Policy string
	Amount int64
	// Reason is the reason given for a reset or a refund; empty for one
	// refused as a forgery.
	Reason string
	// Err is nil when the action was done, else why not: bad input, a
	// request from another origin or without its CSRF token, a refund
	// past what the key used, a store that failed. A lookup that read
	// some limiters but not others has the first failure.
	Err error
	// Request is the request that asked: its remote address, its
	// headers. It never carries the CSRF token: a request that had one
	// (the X-CSRF-Token header, a form's csrf_token) is given as a copy
	// without it.
	Request *http.Request
}
