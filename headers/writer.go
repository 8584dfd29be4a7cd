package headers

import (
	"encoding/json"
	"fmt"
)

// A Writer writes the rate-limit headers of a decision onto a response, and
// the whole 429 response when the decision is a denial. Build one with New;
// its settings are fixed at construction. A Writer is safe for concurrent
// use. The zero Writer is not usable.
type Writer struct {
	names       Names
	legacy      bool
	draft       bool
	everyWindow bool
	problem     *problem
	policies    policyCache
	ints        intCache
}

// problem holds the parts of a problem+json body fixed at construction,
// already JSON-encoded.
type problem struct {
	typ, title []byte
}

// An Option configures New. A nil Option is an error of New.
type Option func(*Writer) error

// New returns a Writer. By default it writes X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset on every decision,
// Retry-After on denials, and a short plain-text 429 body.
func New(opts ...Option) (*Writer, error) {
	w := &Writer{names: DefaultNames(), legacy: true}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if err := o(w); err != nil {
			return nil, err
		}
	}
	n, err := w.names.canonical()
	if err != nil {
		return nil, err
	}
	w.names = n
	return w, nil
}

// WithDraftHeaders turns on the fields of the IETF draft
// draft-ietf-httpapi-ratelimit-headers-10:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=50;t=30
//
// RateLimit-Policy lists every window of the policy; a layered policy
// names its windows after the policy and the window's length
// ("api-1m";q=100;w=60, "api-1s";q=5;w=1). w is left out for a window
// that is not a whole number of seconds, since the draft has no fractions.
// RateLimit names the deciding window only (the one closest to exhaustion,
// or on a denial the refusing one that resets last), as the draft's
// multiple-window example does; see WithEveryWindow.
//
// Every number is an RFC 9651 Integer, at most 15 digits: NewPolicy
// bounds limits by limiter.MaxLimit, so what a limiter decides always
// fits, and the numbers of a Decision made some other way are clamped
// into 0 to limiter.MaxLimit.
func WithDraftHeaders() Option {
	return func(w *Writer) error {
		w.draft = true
		return nil
	}
}

// WithEveryWindow makes the draft RateLimit field list every window of a
// layered policy, in the policy's order, rather than the deciding one. A
// Decision not made by limiter.Decide describes its deciding window only,
// and is written as without this option. On
// a denial a window that did not refuse may then announce a reset later
// than Retry-After; the draft gives Retry-After precedence.
func WithEveryWindow() Option {
	return func(w *Writer) error {
		w.everyWindow = true
		return nil
	}
}

// WithoutLegacyHeaders drops X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset, for services that send the draft fields only.
// Retry-After is still sent on denials.
func WithoutLegacyHeaders() Option {
	return func(w *Writer) error {
		w.legacy = false
		return nil
	}
}

// WithNames renames the headers; empty fields keep their defaults.
func WithNames(n Names) Option {
	return func(w *Writer) error {
		w.names = n
		return nil
	}
}

// WithProblemJSON makes WriteDenied answer with an RFC 9457
// application/problem+json body:
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,
//	 "detail":"rate limit of 100 per 1m exceeded; retry in 30 seconds",
//	 "retry_after":30,"violated-policies":["default"]}
//
// typeURI defaults to "about:blank" and title to "Too Many Requests".
// retry_after repeats Retry-After in seconds; violated-policies names the
// deciding window as the draft headers do.
func WithProblemJSON(typeURI, title string) Option {
	return func(w *Writer) error {
		if typeURI == "" {
			typeURI = "about:blank"
		}
		if title == "" {
			title = "Too Many Requests"
		}
		t, err := json.Marshal(typeURI)
		if err != nil {
			return fmt.Errorf("%w: problem type: %v", ErrInvalidOption, err)
		}
		ti, err := json.Marshal(title)
		if err != nil {
			return fmt.Errorf("%w: problem title: %v", ErrInvalidOption, err)
		}
		w.problem = &problem{typ: t, title: ti}
		return nil
	}
}
