package middleware

import (
	"fmt"
	"net/http"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// An Option configures New. An option only records its argument; New
// checks them all, once, and reports a bad one as an error wrapping
// ErrInvalidOption that names it: a nil Option, an option given a nil
// argument, and an option that cannot apply with the others
// (WithDeniedHandler under WithShadow, which never refuses).
type Option func(*config)

// config is everything New settles; a handler only reads it.
type config struct {
	key          keyfunc.Func
	extra        []rule
	rules        []rule
	shared       []verdict.Rule      // rules' limiters, as verdict.Life asks them
	caps         []capRule           // WithInFlight
	capLimits    []*limiter.InFlight // caps' limiters, as verdict.Life asks them
	limits       verdict.Limits
	cost         func(*http.Request) int64
	lookup       func(*http.Request) (*limiter.Plan, string, error) // WithPlans
	plans        *verdict.Plans                                     // the limits of lookup's plans
	declared     []*limiter.Plan                                    // WithDeclaredPlans
	planCache    *PlanCache                                         // WithPlanCache
	planCacheSet bool
	declaredOn   bool
	exempt       func(r *http.Request, key string) bool
	denied       func(http.ResponseWriter, *http.Request, *limiter.Decision)
	deny         func(http.ResponseWriter, *http.Request, *limiter.Decision, ...*limiter.Decision) // denied, or the default, after the headers
	countIf      func(status int) bool
	onError      func(http.ResponseWriter, *http.Request, error)
	onKeyError   func(http.ResponseWriter, *http.Request, error)
	failOpen     bool
	shadow       bool
	observe      func(Event)
	headers      *headers.Writer
	given        given // the options given, for New to check
	capsOnly     bool  // InFlight: no rate
	held         int   // the one Reported rule whose decision the tally holds, -1 for none (see build)
}

// given records which options were given, so that New can tell a nil
// argument from an option left out.
type given uint16

const (
	givenKey given = 1 << iota
	givenCost
	givenPlans
	givenExempt
	givenDenied
	givenOnError
	givenOnKeyError
	givenObserver
	givenCountIf
	givenHeaders
)

// check reports the first bad option, in the order of the options' docs.
func (c *config) check() error {
	nils := []struct {
		g      given
		isNil  bool
		option string
		what   string
	}{
		{givenKey, c.key == nil, "WithKey", "key function"},
		{givenCost, c.cost == nil, "WithCost", "cost function"},
		{givenPlans, c.lookup == nil, "WithPlans", "lookup"},
		{givenExempt, c.exempt == nil, "WithExempt", "exempt predicate"},
		{givenDenied, c.denied == nil, "WithDeniedHandler", "handler"},
		{givenOnError, c.onError == nil, "WithErrorHandler", "handler"},
		{givenOnKeyError, c.onKeyError == nil, "WithKeyErrorHandler", "handler"},
		{givenObserver, c.observe == nil, "WithObserver", "observer"},
		{givenCountIf, c.countIf == nil, "WithCountIf", "count function"},
		{givenHeaders, c.headers == nil, "WithHeaders", "writer"},
	}
	for _, n := range nils {
		if c.given&n.g != 0 && n.isNil {
			return fmt.Errorf("%w: %s(nil): %s is nil", ErrInvalidOption, n.option, n.what)
		}
	}
	for i, r := range c.extra {
		switch {
		case verdict.Check(r.lim) != nil:
			return fmt.Errorf("%w: WithLimiter (limiter %d): %v", ErrInvalidOption, i+1, verdict.Check(r.lim))
		case r.key == nil && r.rule.Meter == verdict.Fixed:
			return fmt.Errorf("%w: WithLimiter (limiter %d, policy %q): key function is nil", ErrInvalidOption, i+1, r.lim.Policy().Name())
		}
	}
	for i, cr := range c.caps {
		if cr.f == nil {
			return fmt.Errorf("%w: WithInFlight (cap %d): InFlight is nil", ErrInvalidOption, i)
		}
	}
	if len(c.caps) > maxCaps {
		return fmt.Errorf("%w: %d in-flight caps (WithInFlight), at most %d", ErrInvalidOption, len(c.caps), maxCaps)
	}
	switch {
	case c.planCacheSet && c.planCache == nil:
		return fmt.Errorf("%w: WithPlanCache(nil): cache is nil", ErrInvalidOption)
	case c.planCacheSet && c.lookup == nil:
		return fmt.Errorf("%w: WithPlanCache needs WithPlans: without plans nothing is resolved", ErrInvalidOption)
	}
	if c.capsOnly {
		for _, o := range []struct {
			given bool
			name  string
		}{
			{len(c.extra) > 0, optionOf(c.extra)}, {c.given&givenCost != 0, "WithCost"},
			{c.given&givenCountIf != 0, "WithCountIf"},
		} {
			if o.given {
				return fmt.Errorf("%w: %s does not apply to InFlight, which applies no rate: use New", ErrInvalidOption, o.name)
			}
		}
	}
	if c.shadow && c.given&givenDenied != 0 {
		return fmt.Errorf("%w: WithDeniedHandler does not apply under WithShadow, which never refuses a request", ErrInvalidOption)
	}
	return nil
}

// WithKey sets how the limiter passed to New keys a request (default
// keyfunc.RemoteHost with its defaults). What the key function's error
// means decides the answer:
//
//   - it wraps keyfunc.ErrNoKey (the client sent no API key, its address
//     is not one), or the key is "": the client cannot be identified,
//     answered 400 by the key error handler (WithKeyErrorHandler) and
//     reported as KeyError;
//   - it wraps keyfunc.ErrMisconfigured: the key function cannot work
//     where it is installed, answered 500 by the error handler and
//     reported as Misconfigured;
//   - any other error is the key function's own failure (the database it
//     looks keys up in is down): the server's fault, answered 500 by the
//     error handler and reported as KeyFailed.
//
// A key function of your own should wrap keyfunc.ErrNoKey, as every
// built-in does, when the request carries no usable identity.
func WithKey(f keyfunc.Func) Option {
	return func(c *config) { c.key, c.given = f, c.given|givenKey }
}

// WithLimiter adds a limit: l, applied to the key that key resolves. Every
// key is resolved before any limiter is asked; the limiters are then asked
// in order (New's first), and the first refusal answers the request
// without asking the rest. Limiters asked before a refusal have charged
// the request, as stacked middlewares would have. Headers describe the
// most restrictive decision, once. At most 4 limiters in all, New's
// included.
//
// Give each limiter's policy its own name when they share a store, so
// that their counters stay apart.
func WithLimiter(l Limiter, key keyfunc.Func) Option {
	return func(c *config) { c.extra = append(c.extra, rule{lim: l, key: key}) }
}

// WithInFlight caps how many requests run the wrapped handler at once
// per key: at most the InFlight's max for each key that key resolves
// (nil: the middleware's key, WithKey's or the default, resolved once).
// At most 2 caps per middleware; stack middlewares for more.
//
// The rates are asked first, then the caps, in order. A request a rate
// refuses is answered as without caps, and never asks for a slot: a
// flood refused by a rate costs a shared store nothing more. A request
// a cap refuses is answered 429 as a rate's refusal is, with the cap's
// Retry-After (the time its slots were held on average lately, at least
// 1s: see limiter.InFlight), and charges nothing: every rate that
// admitted it is refunded (limiter.Limiter.Refund), and every slot taken
// for it given back. So every limiter of the middleware must have a
// Refund method, as *limiter.Limiter has: New refuses the option
// otherwise. A cap that cannot
// decide (its store failing) is answered as a limiter's error, with the
// rates charged, or passed over with WithFailOpen; under WithShadow a
// cap's refusal lets the request through without a slot, its rates
// refunded and its later caps not asked, as enforcing would count.
//
// An admitted request holds its slots while the wrapped handler runs,
// and gives them back, once, when ServeHTTP returns by any path: a
// return, a panic, a client that left (the handler returns when it
// notices), a streamed response once it ends. A handler that hijacks
// the connection holds the slot until it returns: one that hands the
// connection to a goroutine of its own has given its slot back.
//
// With headers.WithDraftHeaders, RateLimit-Policy lists each cap as
// "name";q=max;qu="concurrent-requests" beside the rates, and RateLimit
// adds its slots left ("name";r=3); X-RateLimit-* keep describing the
// rates, except on a cap's refusal, when they describe the cap (no
// X-RateLimit-Reset: a cap has no window). The observer sees each cap's
// outcome under the cap's Policy, and a Released event when a slot goes
// back.
func WithInFlight(f *limiter.InFlight, key keyfunc.Func) Option {
	return func(c *config) { c.caps = append(c.caps, capRule{f: f, key: key}) }
}

// WithReported adds a limit whose cost is known only once the request has
// been served, and reported by the handler: the tokens of a model's
// answer, say. The request is admitted against a reservation, reserve(r)
// (nil: 1; an estimate from the request, such as a max_tokens, held to
// [1, limiter.MaxLimit]: a client's 0 reserves 1), charged at once so
// that concurrent requests cannot pass the limit, and settled
// once the handler has returned (or panicked, or its client left) at the
// cost the handler reported with Report(ctx, unit, cost), unit being l's
// policy's (limiter.Policy.WithUnit: "acme-tokens"), or at its
// reservation if it reported none: the difference is charged, possibly
// past the limit, into debt, or returned (limiter.Settler says where).
// key is the limit's key function (nil: the middleware's). l must be able
// to settle (*limiter.Limiter on a store that is a limiter.Settler).
//
// A middleware with a metered limit (WithReported, WithBytes) charges a
// request all or nothing: a request any of its limits refuses (or that
// fails, or whose client left, before it is served) is charged by none,
// the limits before refunded; a request a middleware inside answers
// itself (its refusal, say) settles the metered limits at nothing. At most 4 limiters in
// all, New's included; WithCost concerns the others (New's and
// WithLimiter's). The observer sees each settle as a Settled event, its
// Cost the actual cost.
func WithReported(l Limiter, key keyfunc.Func, reserve func(r *http.Request) int64) Option {
	return func(c *config) {
		c.extra = append(c.extra, rule{lim: l, key: key, reserve: reserve, rule: verdict.Rule{Meter: verdict.Reported}})
	}
}

// WithBytes adds a limit on the bytes of content the responses send, a
// download's say, known only once the response has ended: the request is
// admitted against a reservation of 1 byte and settled, once the handler
// has returned (or panicked, or its client left, at what was sent), at
// the bytes it wrote, streamed and flushed responses included, as
// WithReported settles. l's policy must count content-bytes
// (limiter.Policy.WithUnit(limiter.UnitContentBytes)), which the draft
// RateLimit-Policy field says (qu="content-bytes"). key is the limit's
// key function (nil: the middleware's). The handler gets a
// ResponseWriter that counts what it writes and keeps the optional
// interfaces (see WithCountIf). The answer to a HEAD, which sends no
// content, is charged nothing; nor is what a handler writes on a
// hijacked connection.
func WithBytes(l Limiter, key keyfunc.Func) Option {
	return func(c *config) {
		c.extra = append(c.extra, rule{lim: l, key: key, rule: verdict.Rule{Meter: verdict.Bytes}})
	}
}

// WithCost sets the cost of each request (default 1), for endpoints that
// weigh more than others. A cost above the limit is refused without
// charge; a cost of zero or less is a limiter error (limiter.ErrInvalidCost)
// and goes to the error handler, or through with WithFailOpen.
func WithCost(f func(r *http.Request) int64) Option {
	return func(c *config) { c.cost, c.given = f, c.given|givenCost }
}

// WithPlans chooses every limit of the middleware per request from the
// customer's plan: lookup(r) returns the request's plan (a
// limiter.Plan, declared once) and the zone its calendar rates count in
// (a tz database name, "Asia/Kolkata"; "" for the policies' own), from
// the service's record of the customer, found by what authenticates them
// (a principal, an API key): never a zone the client names per request,
// which would let it count a month in each zone it names. Every rate (New's, WithLimiter's,
// WithReported's, WithBytes') then applies the plan's limits for its
// policy, and every cap (WithInFlight) the plan's maximum for it: the
// same limiters, through limiter.Limiter.For and limiter.InFlight.For,
// so that a customer moved to another plan keeps the usage of every unit
// and the slots they hold. A policy or cap the plan does not name keeps
// the limits it was built with. Every limiter of the middleware must be
// a *limiter.Limiter.
//
// A customer is counted in the windows of their zone: refused at their
// own month's end, admitted again at their own midnight, with
// X-RateLimit-Reset and the draft t at it (see limiter.Limiter.For for
// a customer whose zone changes). A zone is loaded by name from Go's tz
// database (import time/tzdata where the system has none), never from a
// path, and at most 1024 of them.
//
// A lookup that finds no customer to look up returns an error wrapping
// keyfunc.ErrNoKey, answered as a key function's (400, KeyError); one
// wrapping keyfunc.ErrMisconfigured is 500, Misconfigured. A lookup that
// fails otherwise (the plans' database down), and a plan first resolved
// once the limiters are closed, take the failure policy, as a store that
// failed does: the error handler (500), or
// through with WithFailOpen, charged by no rate, the caps applied at the
// maxima they were built with; the observer sees an Error outcome under
// each rate's policy, with err. A lookup whose answer cannot apply is
// the server's mistake, answered by the error handler (500) and reported
// as Misconfigured with an error wrapping ErrMisconfigured, never a
// refusal or an admission: no plan (nil, a plan nobody declared), a
// plan's limits that do not fit a policy (another count than its rates,
// or out of range), a cap's maximum below 1, a zone the tz database does
// not have.
//
// The rates and caps of each plan and zone are kept once resolved, and
// looked up without a lock, keyed by the plan's contents (its limits and
// maxima for this middleware's policies) and the zone, never its
// address: a fresh *Plan per request equal to an earlier one finds its
// resolution, and a new *Plan of other limits takes effect at its
// request (a Plan in use must not be written: see limiter.Plan). At
// most 65,536 are kept, unless WithPlanCache says otherwise: past that
// each new one evicts one not used lately (see PlanCache).
func WithPlans(lookup func(r *http.Request) (plan *limiter.Plan, zone string, err error)) Option {
	return func(c *config) { c.lookup, c.given = lookup, c.given|givenPlans }
}

// WithDeclaredPlans declares the plans WithPlans' lookup may answer, so
// that New checks them against the middleware's rates and caps: a plan
// naming a policy or cap the middleware has not (a misspelt name, which
// would be ignored), limits of another count than a policy's rates, out
// of range, or out of order (a month's limit below a minute's, as
// limits given the wrong way round are), or a cap's maximum out of
// range is an error wrapping ErrInvalidOption that names the plan, the
// policy and the problem (see limiter.Plan.Check). A plan the lookup
// answers that was not declared is still checked on its first request
// (500, Misconfigured). Declare to each middleware the plans of its own
// limits: a plan naming limits of another door (the gRPC one, a
// middleware stacked over this one) is refused here. WithDeclaredPlans
// needs WithPlans, and at least one plan, none nil.
func WithDeclaredPlans(plans ...*limiter.Plan) Option {
	return func(c *config) { c.declared, c.declaredOn = append([]*limiter.Plan(nil), plans...), true }
}

// WithExempt passes the requests for which f reports true straight to
// the wrapped handler, uncounted and without headers: health checks, an
// allowlist of internal callers. f is given the request and its key, the
// middleware's (WithKey's, or the client address), resolved once for f,
// every limit keyed by it and the observer (Event.Key): an allowlist of
// addresses compares the key ("203.0.113.7", or "ip6:2001:db8:1:2::/64"
// for IPv6 grouped by /64: keyfunc's forms) rather than resolving the
// client again. key is "" for a request the key function cannot identify,
// which f may still let through (a health check with no API key); one it
// does not is then answered as a key error. So the key function runs for
// exempt requests too: one that looks keys up in a database does so for
// health checks as well.
func WithExempt(f func(r *http.Request, key string) bool) Option {
	return func(c *config) { c.exempt, c.given = f, c.given|givenExempt }
}

// WithDeniedHandler replaces the default 429 answer (the header writer's
// WriteDenied) to a request the limiter refused, d saying why. The
// rate-limit headers, Retry-After included, are set before f is called;
// f writes the status (429, normally) and the body. Under WithShadow no
// request is refused, and New refuses the option.
func WithDeniedHandler(f func(w http.ResponseWriter, r *http.Request, d *limiter.Decision)) Option {
	return func(c *config) { c.denied, c.given = f, c.given|givenDenied }
}

// WithErrorHandler replaces the default answer to a limiter that could not
// decide, to a key function that is misconfigured (the error wraps
// keyfunc.ErrMisconfigured) and to one that failed otherwise than for
// want of a key (see WithKey): 500 Internal Server Error with a generic
// body. err may carry internal detail (addresses, keys): log it, do not
// send it to the client.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *config) { c.onError, c.given = f, c.given|givenOnError }
}

// WithKeyErrorHandler replaces the default answer to a request whose key
// could not be resolved: 400 Bad Request with a generic body. err wraps
// keyfunc.ErrNoKey (or is the error of an empty key, which does too); a
// key function's other errors go to the error handler (see WithKey). To limit
// such requests by another key instead of answering them, use a key
// function with a fallback, keyfunc.First. As with WithErrorHandler, err
// is for the log, not for the client.
func WithKeyErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return func(c *config) { c.onKeyError, c.given = f, c.given|givenOnKeyError }
}

// WithFailOpen passes requests through when a limiter cannot decide (its
// store is down, say), instead of answering 500. It keeps the service up
// through a limiter outage, at the price of no limit meanwhile: a choice
// for public reads, not for logins or costly operations. The failure is
// still reported to the observer, with Event.FailOpen set.
//
// A request whose context is done when the limiter fails is not let
// through: the client left (or the server's deadline for the request
// passed), which is no store failure, and admitting it uncharged would be
// a way past the limit for anyone who hangs up early. It is reported as
// Canceled and answered 499, without calling the handler. Nor does
// fail-open let through a key function that cannot work where it is
// installed (Misconfigured, 500).
func WithFailOpen() Option { return func(c *config) { c.failOpen = true } }

// WithShadow decides and counts as usual and sends the rate-limit headers,
// but never refuses: a request the limiter denies is passed on and
// reported as ShadowDenied. Roll a new limit out in shadow mode, watch the
// shadow_denied count, then enforce it. On a shadow denial the headers say
// nothing remains but carry no Retry-After, since the response is not a
// refusal. Refused requests are not charged, as when enforcing.
//
// With several limiters (WithLimiter), shadow mode stops where enforcing
// would: at the first limiter that refuses, which is reported as
// ShadowDenied; the limiters after it are neither asked nor charged. So
// the counts and the shadow_denied outcomes are exactly those enforcing
// would make, and the headers describe the refusal a 429 would have
// carried. A later limiter's own shadow refusals therefore show only once
// the earlier ones admit.
func WithShadow() Option { return func(c *config) { c.shadow = true } }

// WithObserver has f told of every decision, limiter error and key failure
// (see Event). Package middleware/metrics provides one for Prometheus.
// Decision latency is measured only when an observer is set.
func WithObserver(f func(Event)) Option {
	return func(c *config) { c.observe, c.given = f, c.given|givenObserver }
}

// WithCountIf counts only the responses whose status count reports true:
// the classic use is a login route that counts failures alone,
//
//	middleware.WithCountIf(func(status int) bool { return status == 401 || status == 403 })
//
// The request is charged before the handler runs, as without the option,
// so concurrent requests can never pass the limit; once the handler has
// returned, a response whose status count rejects is refunded: every
// limiter of the middleware that charged it returns the cost, to every
// window of its policy that is still the current one (see
// limiter.Limiter.Refund; a refund never lends budget to a later
// window). The status is the one the handler wrote, 200 if it wrote a
// body or nothing without WriteHeader. A handler that panics, or hijacks
// the connection, stays charged: its answer is unknown.
//
// The rate-limit headers were written before the handler ran, so
// Remaining counts this request as spent: after a refund one more is
// left than the header said. It is what remains if this response counts:
// a success with one attempt left answers X-RateLimit-Remaining: 0 and
// leaves 1.
//
// Every limiter of the middleware must have a Refund method, as
// *limiter.Limiter has: New refuses the option otherwise, as it does a
// nil count. The handler gets a
// ResponseWriter that records the status; it keeps http.Flusher,
// http.Hijacker, io.ReaderFrom and http.Pusher, and unwraps for
// http.ResponseController. Refunds are reported to the observer as
// Refunded events.
func WithCountIf(count func(status int) bool) Option {
	return func(c *config) { c.countIf, c.given = count, c.given|givenCountIf }
}

// WithHeaders sets the writer of the rate-limit headers and of the 429
// answer (default: headers.New() with its defaults). Build it with
// headers.New and its options: draft IETF headers, header names,
// problem+json.
func WithHeaders(w *headers.Writer) Option {
	return func(c *config) { c.headers, c.given = w, c.given|givenHeaders }
}

// optionOf names the option that added the first of extra: WithLimiter,
// WithReported or WithBytes.
func optionOf(extra []rule) string {
	if len(extra) == 0 {
		return ""
	}
	return verdict.OptionOf(extra[0].rule.Meter)
}
