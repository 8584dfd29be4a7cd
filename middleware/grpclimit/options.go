package grpclimit

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// An Option configures New. An option only records its argument; New
// checks them all, once, and reports a bad one as an error wrapping
// ErrInvalidOption that names it: a nil Option, an option given a nil
// argument, and an option that cannot apply.
type Option func(*config)

// config is everything New settles; a call only reads it.
type config struct {
	key      KeyFunc
	extra    []rule
	methods  map[string]middleware.Limiter
	caps     []capRule
	exempt   func(ctx context.Context, fullMethod string) bool
	cost     func(ctx context.Context, fullMethod string) int64
	lookup   func(ctx context.Context, fullMethod string) (*limiter.Plan, string, error) // WithPlans
	declared []*limiter.Plan                                                             // WithDeclaredPlans
	declOn   bool
	kept     *middleware.PlanCache // WithPlanCache
	onError  func(ctx context.Context, fullMethod string, err error) error
	onKey    func(ctx context.Context, fullMethod string, err error) error // WithKeyErrorHandler
	failOpen bool
	shadow   bool
	observe  func(middleware.Event)
	headers  *headers.Writer
	pushback time.Duration // WithMaxPushback's bound
	given    given         // the options given, for New to check
	capsOnly bool          // NewInFlight: no rate
}

// given records which options were given, so that New can tell a nil
// argument from an option left out.
type given uint16

const (
	givenKey given = 1 << iota
	givenMethods
	givenExempt
	givenCost
	givenObserver
	givenHeaders
	givenMaxPushback
	givenPlans
	givenErrorHandler
	givenKeyErrorHandler
	givenPlanCache
)

// The bounds of WithMaxPushback. The default is the longest wait of a
// per-minute window; the ceiling is the largest pushback gRFC A6's signed
// 32-bit count of milliseconds carries.
const (
	defaultMaxPushback = time.Minute
	pushbackCeiling    = math.MaxInt32 * time.Millisecond
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
		{givenMethods, c.methods == nil, "WithMethods", "map"},
		{givenExempt, c.exempt == nil, "WithExempt", "exempt predicate"},
		{givenCost, c.cost == nil, "WithCost", "cost function"},
		{givenObserver, c.observe == nil, "WithObserver", "observer"},
		{givenHeaders, c.headers == nil, "WithHeaders", "writer"},
		{givenPlans, c.lookup == nil, "WithPlans", "lookup"},
		{givenErrorHandler, c.onError == nil, "WithErrorHandler", "handler"},
		{givenKeyErrorHandler, c.onKey == nil, "WithKeyErrorHandler", "handler"},
		{givenPlanCache, c.kept == nil, "WithPlanCache", "cache"},
	}
	for _, n := range nils {
		if c.given&n.g != 0 && n.isNil {
			return fmt.Errorf("%w: %s(nil): %s is nil", ErrInvalidOption, n.option, n.what)
		}
	}
	if c.given&givenPlanCache != 0 && c.lookup == nil {
		return fmt.Errorf("%w: WithPlanCache needs WithPlans: without plans nothing is resolved", ErrInvalidOption)
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
	if c.capsOnly {
		for _, o := range []struct {
			given bool
			name  string
		}{
			{len(c.extra) > 0, optionOf(c.extra)}, {c.given&givenMethods != 0, "WithMethods"},
			{c.given&givenCost != 0, "WithCost"},
		} {
			if o.given {
				return fmt.Errorf("%w: %s does not apply to NewInFlight, which applies no rate: use New", ErrInvalidOption, o.name)
			}
		}
	}
	for _, m := range slices.Sorted(maps.Keys(c.methods)) {
		switch l := c.methods[m]; {
		case !validMethod(m):
			return fmt.Errorf("%w: WithMethods: %q is not a full method name, /package.Service/Method", ErrInvalidOption, m)
		case verdict.Check(l) != nil:
			return fmt.Errorf("%w: WithMethods: the limiter of %s: %v", ErrInvalidOption, m, verdict.Check(l))
		}
	}
	if c.headers != nil {
		for _, name := range names(c.headers.Lower()) {
			if !validMetadataName(name) || strings.HasSuffix(name, "-bin") || strings.HasPrefix(name, "grpc-") {
				return fmt.Errorf("%w: WithHeaders: field %q is not a metadata name gRPC can send as text", ErrInvalidOption, name)
			}
		}
	}
	if c.given&givenMaxPushback != 0 && (c.pushback <= 0 || c.pushback > pushbackCeiling) {
		return fmt.Errorf("%w: WithMaxPushback(%v): want a bound above 0 and at most %v, the 2147483647 ms of gRFC A6's pushback", ErrInvalidOption, c.pushback, pushbackCeiling)
	}
	return nil
}

// maxPushback returns WithMaxPushback's bound, or the default.
func (c *config) maxPushback() time.Duration {
	if c.given&givenMaxPushback == 0 {
		return defaultMaxPushback
	}
	return c.pushback
}

// validMethod reports whether m is a full method name: "/", a service,
// "/", a method, neither empty nor holding another "/".
func validMethod(m string) bool {
	svc, method, ok := strings.Cut(strings.TrimPrefix(m, "/"), "/")
	return strings.HasPrefix(m, "/") && ok && svc != "" && method != "" && !strings.Contains(method, "/")
}

// WithKey sets how the limiter passed to New keys a call (default
// PeerHost). A key function that fails, or returns "", answers the call
// INVALID_ARGUMENT (keyfunc.ErrNoKey) or INTERNAL (any other error).
func WithKey(f KeyFunc) Option {
	return func(c *config) { c.key, c.given = f, c.given|givenKey }
}

// WithLimiter adds a limit: l, applied to the key that key resolves, as
// middleware.WithLimiter does. Every key is resolved before any limiter is
// asked; the limiters are then asked in order (New's first), and the
// first refusal answers the call without asking the rest. The metadata
// describe the most restrictive decision, once. At most 4 limiters in
// all, New's included.
func WithLimiter(l middleware.Limiter, key KeyFunc) Option {
	return func(c *config) { c.extra = append(c.extra, rule{lim: l, key: key}) }
}

// WithReported adds a limit whose cost is known only once the call has
// been served, and reported by the handler, as middleware.WithReported
// does for HTTP: the tokens of a model's answer, say. The call is
// admitted against a reservation, reserve(ctx, fullMethod) (nil: 1;
// held to [1, limiter.MaxLimit]),
// charged at once, and settled when the handler returns (a unary call)
// or the stream ends, on every path (an error, a panic, a client that
// cancels), at the cost the handler reported with middleware.Report(ctx,
// unit, cost), unit being l's policy's (limiter.Policy.WithUnit:
// "acme-tokens"), or at the reservation if it reported none. key is the
// limit's key function (nil: the interceptor's). l must be able to
// settle (*limiter.Limiter on a store that is a limiter.Settler).
//
// An interceptor with a metered limit (WithReported, WithBytes) charges a
// call all or nothing: a call any of its limits refuses (or that fails,
// or whose client left, before it is served) is charged by none, the
// limits before refunded; a call an interceptor inside answers itself
// settles the metered limits at nothing. WithCost concerns the
// other limits. The observer sees each settle as a Settled event, its
// Cost the actual cost. With headers.WithUnitHeaders, each unit's
// x-ratelimit-*-<unit> metadata describe its limits.
func WithReported(l middleware.Limiter, key KeyFunc, reserve func(ctx context.Context, fullMethod string) int64) Option {
	return func(c *config) {
		c.extra = append(c.extra, rule{lim: l, key: key, reserve: reserve, rule: verdict.Rule{Meter: verdict.Reported}})
	}
}

// WithBytes adds a limit on the bytes the server sends, counted as the
// wire size of each protobuf message it sends (proto.Size: a message of
// another codec counts nothing), the response of a unary call, every
// message of a stream, and settled, as WithReported settles, when the
// handler returns or the stream ends, at what was sent: a stream whose
// client left is charged for the messages sent before. The call is
// admitted against a reservation of 1 byte. l's policy must count
// content-bytes (limiter.Policy.WithUnit(limiter.UnitContentBytes)). key
// is the limit's key function (nil: the interceptor's).
func WithBytes(l middleware.Limiter, key KeyFunc) Option {
	return func(c *config) {
		c.extra = append(c.extra, rule{lim: l, key: key, rule: verdict.Rule{Meter: verdict.Bytes}})
	}
}

// WithMethods sets, per full method ("/package.Service/Method"), the
// limiter that applies in place of the one given to New, keyed alike: a
// costly method gets a tighter policy. A method with no entry uses New's
// limiter. Give each policy its own name. The map is copied; a nil
// limiter or a key that is not a full method name is an error.
func WithMethods(m map[string]middleware.Limiter) Option {
	return func(c *config) { c.methods, c.given = m, c.given|givenMethods }
}

// WithPlans chooses every limit of the interceptor per call from the
// caller's plan, as middleware.WithPlans does per request: lookup(ctx,
// fullMethod) returns the call's plan (a limiter.Plan, declared once)
// and the zone its calendar rates count in ("" for the policies' own),
// and every rate (New's, or the one WithMethods gives the method, and
// WithLimiter's, WithReported's, WithBytes') applies the plan's limits
// for its policy, every cap (WithInFlight) the plan's maximum, on the
// same usage as the HTTP middleware's over the same limiters. Every
// limiter of the interceptor must be a *limiter.Limiter.
//
// A lookup error wrapping keyfunc.ErrNoKey is INVALID_ARGUMENT, and one
// wrapping keyfunc.ErrMisconfigured INTERNAL, as a key function's; any
// other takes the failure policy, as a store that failed does (UNAVAILABLE, or the error handler's answer; through with
// WithFailOpen). A lookup whose answer cannot apply (no plan, limits
// that do not fit a policy, a cap below 1, a zone the tz database does
// not have) is the server's mistake: INTERNAL (or the error handler's
// answer), reported as Misconfigured with an error wrapping
// middleware.ErrMisconfigured. Resolutions are kept per plan and zone
// as middleware.WithPlans keeps them (middleware.PlanCache): by the
// plan's limits, not its address, so a Plan must not change once used;
// a plan of other limits is a new Plan, and takes effect at once.
func WithPlans(lookup func(ctx context.Context, fullMethod string) (plan *limiter.Plan, zone string, err error)) Option {
	return func(c *config) { c.lookup, c.given = lookup, c.given|givenPlans }
}

// WithPlanCache keeps WithPlans' resolutions, the interceptor's and
// every method's (WithMethods), in c, which it may share with HTTP
// middlewares (middleware.WithPlanCache): to bound them together, or to
// watch them (c.Stats, which middleware/metrics and
// middleware/otelmetrics export). Without it the interceptor's
// resolutions and each method's are kept apart, 65,536 each. It needs
// WithPlans.
func WithPlanCache(c *middleware.PlanCache) Option {
	return func(cfg *config) { cfg.kept, cfg.given = c, cfg.given|givenPlanCache }
}

// WithDeclaredPlans declares the plans WithPlans' lookup may answer, so
// that New checks them against the interceptor's rates (New's,
// WithMethods', WithLimiter's, WithReported's, WithBytes') and caps, as
// middleware.WithDeclaredPlans does: a name none of them has, limits of
// another count than a policy's rates, out of range or out of order, a
// cap's maximum out of range are errors wrapping ErrInvalidOption that
// name the plan, the policy and the problem. A plan first answered
// without being declared is still checked on its first call (INTERNAL,
// Misconfigured). WithDeclaredPlans needs WithPlans, and at least one
// plan, none nil.
func WithDeclaredPlans(plans ...*limiter.Plan) Option {
	return func(c *config) { c.declared, c.declOn = append([]*limiter.Plan(nil), plans...), true }
}

// WithInFlight caps how many calls run at once per key: at most the
// InFlight's max for each key that key resolves (nil: the interceptor's
// key, WithKey's or PeerHost), as middleware.WithInFlight does for HTTP.
// The rates are asked first, then the caps, in order; a call a cap
// refuses is answered RESOURCE_EXHAUSTED as a rate's refusal is, with the
// cap's wait (the time its slots were held on average lately, at least
// 1s: see limiter.InFlight) in RetryInfo and the pushback, and charges
// nothing: every rate that admitted it is refunded, so every limiter of
// the interceptor must have a Refund method, as *limiter.Limiter has:
// New refuses the option otherwise. An admitted call holds its slot while
// the handler runs: a unary call until it returns, a stream until it
// ends, on every path (a return, an error, a panic, a client that
// cancels), given back exactly once. At most 2 caps per interceptor;
// chain interceptors for more, or use NewInFlight for a cap without a
// rate.
func WithInFlight(f *limiter.InFlight, key KeyFunc) Option {
	return func(c *config) { c.caps = append(c.caps, capRule{f: f, key: key}) }
}

// WithErrorHandler replaces the answer to a call the server could not
// limit: a limiter that could not decide (UNAVAILABLE by default), a key
// function that is misconfigured or failed for a reason of its own, and a
// resolver that returned a limiter that cannot be asked (INTERNAL by
// default), as the HTTP middleware's WithErrorHandler answers them with
// 500. f's result is the call's answer (a nil result keeps the default);
// err may carry internal detail (addresses, keys): log it, and never send
// it to the client. A call whose client left is answered CANCELED (or
// DEADLINE_EXCEEDED) without f, and one with no key INVALID_ARGUMENT
// (or WithKeyErrorHandler's answer):
// the client's doing.
func WithErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return func(c *config) { c.onError, c.given = f, c.given|givenErrorHandler }
}

// WithKeyErrorHandler replaces the answer to a call whose key could not
// be resolved: a key function's error, or a plan lookup's (WithPlans),
// that wraps keyfunc.ErrNoKey (or an empty key), INVALID_ARGUMENT by
// default, as the HTTP middleware's WithKeyErrorHandler replaces its 400.
// f's result is the call's answer, a status error of the service's
// choosing: UNAUTHENTICATED for an unknown or missing API key,
// PERMISSION_DENIED for a key that may not call; a nil result keeps the
// default. Such a call is never the failure policy's: nothing is
// charged, and the handler does not run even under WithFailOpen. A key
// function that fails for another reason goes to WithErrorHandler. err
// may carry the key: log it, and never send it to the client.
func WithKeyErrorHandler(f func(ctx context.Context, fullMethod string, err error) error) Option {
	return func(c *config) { c.onKey, c.given = f, c.given|givenKeyErrorHandler }
}

// WithExempt passes the calls for which f reports true straight to the
// handler, uncounted and without metadata: health checks
// ("/grpc.health.v1.Health/Check"), an allowlist of internal callers.
func WithExempt(f func(ctx context.Context, fullMethod string) bool) Option {
	return func(c *config) { c.exempt, c.given = f, c.given|givenExempt }
}

// WithCost sets the cost of each call (default 1), for methods that weigh
// more than others. A cost above the limit is refused without charge; a
// cost of zero or less is a limiter error (limiter.ErrInvalidCost):
// UNAVAILABLE, or through with WithFailOpen.
func WithCost(f func(ctx context.Context, fullMethod string) int64) Option {
	return func(c *config) { c.cost, c.given = f, c.given|givenCost }
}

// WithFailOpen lets calls through when a limiter cannot decide (its store
// is down, say), instead of answering UNAVAILABLE: the service stays up
// through a limiter outage, with no limit meanwhile. The failure is still
// reported to the observer, with Event.FailOpen set. A call whose context
// is done is not let through (CANCELED or DEADLINE_EXCEEDED), nor one
// whose key function fails.
func WithFailOpen() Option { return func(c *config) { c.failOpen = true } }

// WithShadow decides, counts and sends the metadata but never refuses: a
// call the limiter denies is passed on and reported as ShadowDenied, as
// middleware.WithShadow does, stopping at the first refusal so that the
// counts are the ones enforcing would make.
func WithShadow() Option { return func(c *config) { c.shadow = true } }

// WithObserver has f told of every decision, limiter error and key
// failure, as middleware.WithObserver does, so that middleware/metrics'
// and middleware/otelmetrics' Observe work unchanged. The Event's Request
// is a stand-in for the call, made only when an observer is set: its
// context is the call's (the span and exemplars of otelmetrics), Method
// is POST, URL.Path, RequestURI and Pattern are the full method, Proto is
// HTTP/2.0; it has no header. Decision latency is measured only when an
// observer is set.
func WithObserver(f func(middleware.Event)) Option {
	return func(c *config) { c.observe, c.given = f, c.given|givenObserver }
}

// WithHeaders sets the writer of the rate-limit metadata (default:
// headers.New() with its defaults, x-ratelimit-limit,
// x-ratelimit-remaining and x-ratelimit-reset): build it with headers.New
// to add the draft's ratelimit and ratelimit-policy fields
// (headers.WithDraftHeaders), drop the x-ratelimit-* ones or rename them.
// The names are sent in lower case; a name that is not a valid gRPC
// metadata name is an error. The same Writer may serve the HTTP
// middleware: its body settings (WithProblemJSON) concern HTTP's 429 and
// are not used here.
func WithHeaders(w *headers.Writer) Option {
	return func(c *config) { c.headers, c.given = w, c.given|givenHeaders }
}

// WithMaxPushback sets the longest wait a refusal asks gRPC clients to
// retry after (default one minute). A refusal whose wait, in whole
// seconds rounded up as RetryInfo states it, is longer than d sends
// grpc-retry-pushback-ms: -1, which gRFC A6 defines as "do not retry":
// a client with a retry policy for RESOURCE_EXHAUSTED gets the refusal
// at once, instead of waiting out its deadline (DEADLINE_EXCEEDED) or,
// without one, holding the call until the window turns, a day or a month
// away. RetryInfo, retry-after and x-ratelimit-reset still say when the
// quota returns. A wait of d or less is pushed back as before, and the
// client's retry comes once the window has turned.
//
// The default, one minute, is the longest wait of a per-minute window:
// every refusal of a per-second or per-minute limit is still retried
// after its boundary, while the waits of hourly, daily and monthly limits
// outlast the deadlines calls commonly carry, seconds. d must be above 0
// and at most 2147483647 ms (about 24.8 days), the largest pushback gRFC
// A6's signed 32-bit value carries. Since every wait is at least one
// second, a d under a second asks no refusal to be retried. Each
// Interceptor has its own bound; a refusal follows the one of the
// Interceptor that refused.
func WithMaxPushback(d time.Duration) Option {
	return func(c *config) { c.pushback, c.given = d, c.given|givenMaxPushback }
}

// optionOf names the option that added the first of extra: WithLimiter,
// WithReported or WithBytes.
func optionOf(extra []rule) string {
	if len(extra) == 0 {
		return ""
	}
	return verdict.OptionOf(extra[0].rule.Meter)
}
