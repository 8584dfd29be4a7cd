package headers

import (
	"encoding/json"
	"fmt"
	"strings"
)

// A Writer writes the rate-limit headers of a decision onto a response, and
// the whole 429 response when the decision is a denial. Build one with New;
// its settings are fixed at construction. A Writer is safe for concurrent
// use. The zero Writer is not usable.
type Writer struct {
	names    Names
	legacy   bool
	draft    bool
	units    bool // WithUnitHeaders
	lower    bool // Lower's: names in lower case
	unitSets unitCache
	problem  *problem
	policies policyCache
	ints     intCache
}

// problem holds the parts of a problem+json body fixed at construction,
// already JSON-encoded.
type problem struct {
	typ, title []byte
}

// An Option configures New. An option only records its argument; New
// checks them all, once, and reports a bad one as an error wrapping
// ErrInvalidOption that names it. A nil Option is such an error, and so
// is an option that does not apply to the Writer the others make: see
// WithNames.
type Option func(*config)

// config is what the options set, for New to check.
type config struct {
	names        Names
	noLegacy     bool
	draft        bool
	units        bool
	problem      bool
	problemType  string
	problemTitle string
}

// New returns a Writer. By default it writes X-RateLimit-Limit,
// X-RateLimit-Remaining and X-RateLimit-Reset on every decision,
// Retry-After on denials, and a short plain-text 429 body.
func New(opts ...Option) (*Writer, error) {
	var c config
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	switch n := c.names; {
	case !c.draft && (n.RateLimit != "" || n.RateLimitPolicy != ""):
		return nil, fmt.Errorf("%w: WithNames(%+v) does not apply: it renames the draft fields, which only WithDraftHeaders() sends", ErrInvalidOption, n)
	case c.noLegacy && c.units:
		return nil, fmt.Errorf("%w: WithUnitHeaders() does not apply: it sets X-RateLimit-*-<Unit> fields, which WithoutLegacyHeaders() drops", ErrInvalidOption)
	case c.noLegacy && (n.Limit != "" || n.Remaining != "" || n.Reset != ""):
		return nil, fmt.Errorf("%w: WithNames(%+v) does not apply: it renames X-RateLimit-* fields, which WithoutLegacyHeaders() drops", ErrInvalidOption, n)
	}
	names, err := c.names.canonical()
	if err != nil {
		return nil, err
	}
	w := &Writer{names: names, legacy: !c.noLegacy, draft: c.draft, units: c.units}
	if c.problem {
		if w.problem, err = newProblem(c.problemType, c.problemTitle); err != nil {
			return nil, err
		}
	}
	return w, nil
}

// Names returns the names w writes, in canonical form, the defaults
// filled in.
func (w *Writer) Names() Names { return w.names }

// Lower returns a Writer that writes what w writes under w's names in
// lower case ("x-ratelimit-limit"), for maps whose keys are sent as they
// are and must be lower case: gRPC metadata (package
// middleware/grpclimit writes a metadata.MD with it) and other HTTP/2
// header blocks. It has caches of its own; w is unchanged. Its
// WriteDenied is of no use to such maps, and its Write must not be given
// an http.Header, whose Get looks up canonical names.
func (w *Writer) Lower() *Writer {
	n := w.names
	for _, p := range []*string{&n.Limit, &n.Remaining, &n.Reset, &n.RetryAfter, &n.RateLimit, &n.RateLimitPolicy} {
		*p = strings.ToLower(*p)
	}
	return &Writer{names: n, legacy: w.legacy, draft: w.draft, units: w.units, lower: true, problem: w.problem}
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
// A calendar window (limiter.PerDayIn) is named after its period
// ("plan-day") and its w is the length of the window current at the
// decision: 82800 on a day of 23 hours.
// RateLimit lists every window of the decision's policy, in the
// policy's order, each as an item of its own (the draft allows one item
// per policy, and names each window as one): a customer sees the
// month's balance beside the minute's, where X-RateLimit-* describe
// only the deciding window (the one closest to exhaustion, or on a
// denial the refusing one that resets last). On a denial a window that
// did not refuse announces its own reset, which may be later than
// Retry-After; the draft gives Retry-After precedence. A Decision not
// made by limiter.Decide (a custom Limiter's) describes its deciding
// window only, and RateLimit lists that one. With several policies
// applied to one response (stacked middlewares, WithLimiter, in-flight
// caps), RateLimit-Policy names every one and RateLimit lists the
// windows of every one, in the same order (see Write). Default: off.
//
// Every number is an RFC 9651 Integer, at most 15 digits: NewPolicy
// bounds limits by limiter.MaxLimit, so what a limiter decides always
// fits, and the numbers of a Decision made some other way are clamped
// into 0 to limiter.MaxLimit.
func WithDraftHeaders() Option { return func(c *config) { c.draft = true } }

// WithoutLegacyHeaders drops X-RateLimit-Limit, X-RateLimit-Remaining and
// X-RateLimit-Reset, for services that send the draft fields only.
// Retry-After is still sent on denials. Default: sent.
func WithoutLegacyHeaders() Option { return func(c *config) { c.noLegacy = true } }

// WithNames renames the headers; empty fields keep their defaults (see
// Names). A name for a field the Writer does not send is refused by New:
// RateLimit or RateLimitPolicy without WithDraftHeaders, Limit, Remaining
// or Reset with WithoutLegacyHeaders.
func WithNames(n Names) Option { return func(c *config) { c.names = n } }

// WithProblemJSON makes WriteDenied answer with an RFC 9457
// application/problem+json body:
//
//	{"type":"about:blank","title":"Too Many Requests","status":429,
//	 "detail":"rate limit of 100 per 1m exceeded; retry in 30 seconds",
//	 "retry_after":30,"violated-policies":["default"]}
//
// typeURI defaults to "about:blank" and title to "Too Many Requests".
// retry_after repeats Retry-After in seconds; violated-policies names the
// deciding window as the draft headers do. Default: a plain-text body.
func WithProblemJSON(typeURI, title string) Option {
	return func(c *config) { c.problem, c.problemType, c.problemTitle = true, typeURI, title }
}

// newProblem encodes the fixed parts of a problem+json body.
func newProblem(typeURI, title string) (*problem, error) {
	if typeURI == "" {
		typeURI = "about:blank"
	}
	if title == "" {
		title = "Too Many Requests"
	}
	t, err := json.Marshal(typeURI)
	if err != nil {
		return nil, fmt.Errorf("%w: WithProblemJSON: problem type %q: %v", ErrInvalidOption, typeURI, err)
	}
	ti, err := json.Marshal(title)
	if err != nil {
		return nil, fmt.Errorf("%w: WithProblemJSON: problem title %q: %v", ErrInvalidOption, title, err)
	}
	return &problem{typ: t, title: ti}, nil
}
