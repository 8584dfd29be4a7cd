package middleware

import (
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// An Outcome is what became of one request under one limiter. The zero
// Outcome is none of them; its String is "unknown".
type Outcome uint8

// The outcomes an observer (WithObserver) sees.
const (
	// Allowed: the limiter admitted the request.
	Allowed Outcome = iota + 1
	// Denied: the limiter refused the request and it was answered 429.
	Denied
	// ShadowDenied: the limiter refused the request, but shadow mode let
	// it through.
	ShadowDenied
	// Error: the limiter could not decide. The request was answered by
	// the error handler, or passed on if Event.FailOpen is set.
	Error
	// KeyError: the request's key could not be resolved: the key
	// function's error wraps keyfunc.ErrNoKey (the client sent no API
	// key, its address is not one), or it returned "". No limiter was
	// asked; the request was answered by the key error handler (400).
	KeyError
	// Misconfigured: the key function cannot work where the server
	// installed it (its error wraps keyfunc.ErrMisconfigured:
	// keyfunc.RoutePattern around a ServeMux, chikey.ClientIP without a
	// ClientIPFrom* middleware), or the resolver returned a limiter that
	// cannot be asked, a typed nil (the error wraps ErrMisconfigured).
	// No limiter was asked; the request was answered by the error
	// handler (500), with or without WithFailOpen. Also: the handler
	// reported a cost (Report) in a unit no limit around it counts, a
	// misspelt unit say (the error wraps ErrMisconfigured and names the
	// units counted; Cost is the cost reported; no Request, Policy or
	// Key); Report returned false, and the request goes on.
	Misconfigured
	// Canceled: the limiter could not decide and the request's context
	// was done: the client left, or the server's own deadline for the
	// request passed. It is no store failure and nothing was admitted,
	// with or without WithFailOpen: the handler was not called, and the
	// answer is a bare 499, the status access logs know from nginx as
	// "client closed request" (nobody is there to read it).
	Canceled
	// Refunded: the limiter was asked to return the charge: after the
	// handler answered with a status WithCountIf does not count, or when
	// an in-flight cap (WithInFlight) refused a request the rates had
	// admitted. Err is the refund's error, if it failed (the charge then
	// stays).
	Refunded
	// KeyFailed: the key function failed with an error that does not
	// wrap keyfunc.ErrNoKey: not a client without a key but the key
	// function's own failure (the database it looks API keys up in is
	// down, say), the server's fault. No limiter was asked; the request
	// was answered by the error handler (500), with or without
	// WithFailOpen, which concerns the limiter alone.
	KeyFailed
	// Released: a request an in-flight cap (WithInFlight) admitted has
	// ended, on whatever path (a return, a panic, a client gone), and
	// its slot was given back. Decision is the admission; Duration is
	// how long the slot was held, by the cap's clock.
	Released
	// Settled: a metered limit (WithReported, WithBytes) was settled at
	// the request's actual cost, Event.Cost, once the handler had
	// answered. Decision is the admission, at its reservation; Err is
	// the settle's error, if it failed (a store across a network may
	// have applied it all the same).
	Settled
)

var outcomeNames = [...]string{
	Allowed:       "allowed",
	Denied:        "denied",
	ShadowDenied:  "shadow_denied",
	Error:         "error",
	KeyError:      "key_error",
	Misconfigured: "misconfigured",
	Canceled:      "canceled",
	Refunded:      "refunded",
	KeyFailed:     "key_failed",
	Released:      "released",
	Settled:       "settled",
}

// String returns the outcome's name in snake case ("shadow_denied"), as
// used for metric labels.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "unknown"
}

// An Event describes one decision, error or key failure, for an observer
// (WithObserver).
// A middleware with several limiters reports one event per limiter it
// asked. The zero Event describes nothing.
type Event struct {
	// Request is the request being limited; nil for a Misconfigured
	// report (Report is given the request's context alone). An observer
	// must not keep it after returning.
	Request *http.Request
	// Key is the key the limiter was asked about; empty for KeyError,
	// KeyFailed and Misconfigured.
	// It identifies a client: log it with care and never use it as a
	// metric label.
	Key string
	// Policy is the policy of the limiter concerned: for an in-flight
	// cap, its Policy (MaxInFlight reports its max).
	Policy *limiter.Policy
	// Outcome is what became of the request under this limiter.
	Outcome Outcome
	// Decision is the limiter's answer (for Refunded, the one refunded);
	// the zero Decision for Error, Canceled, KeyError, KeyFailed and
	// Misconfigured.
	Decision limiter.Decision
	// Err is the limiter's error for Error and Canceled, the key
	// function's for KeyError, KeyFailed and Misconfigured (it says what
	// is set up wrong), the refund's for a Refunded that failed, and nil otherwise.
	Err error
	// FailOpen reports that an error let the request through.
	FailOpen bool
	// Duration is how long the limiter took to answer; zero for
	// KeyError, KeyFailed, Misconfigured and Refunded; for Released, how
	// long the slot was held.
	Duration time.Duration
	// Cost is what the request cost under this limit: the cost asked
	// (a metered limit's reservation) for a decision or a refund, the
	// actual cost for Settled; zero otherwise.
	Cost int64
}
