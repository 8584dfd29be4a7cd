package grpclimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// maxLimiters is the most limiters one interceptor applies: the one given
// to New and those added with WithLimiter.
const maxLimiters = verdict.MaxRules

// maxCaps is the most in-flight caps one interceptor applies
// (WithInFlight).
const maxCaps = verdict.MaxCaps

// A rule is one limiter and the key it is applied to.
type rule struct {
	lim     middleware.Limiter
	key     KeyFunc
	rule    verdict.Rule                                       // lim, as the shared admission asks it
	reserve func(ctx context.Context, fullMethod string) int64 // a reported rule's reservation (WithReported); nil: 1
}

// A capRule is one in-flight cap and the key it is applied to.
type capRule struct {
	f   *limiter.InFlight
	key KeyFunc // nil: the interceptor's key, resolved once
}

// An Interceptor limits the calls of a gRPC server with a limiter, as
// package middleware limits HTTP requests: Unary for unary methods,
// Stream for streaming ones (a stream is decided once, when it opens).
// Build it with New, or NewInFlight for a cap alone; its settings are
// fixed there and it is safe for concurrent use. The zero Interceptor is
// not usable.
type Interceptor struct {
	rules     []rule
	own       limits             // the rules' and caps' limiters, as verdict.Life asks them
	methods   map[string]*limits // per full method: rules[0] replaced by WithMethods'
	caps      []capRule
	key       KeyFunc // the interceptor's key: WithKey's, or PeerHost
	limits    verdict.Limits
	exempt    func(ctx context.Context, fullMethod string) bool
	cost      func(ctx context.Context, fullMethod string) int64
	lookup    func(ctx context.Context, fullMethod string) (*limiter.Plan, string, error) // WithPlans
	onError   func(ctx context.Context, fullMethod string, err error) error
	onKey     func(ctx context.Context, fullMethod string, err error) error // WithKeyErrorHandler
	observe   func(middleware.Event)
	md        *headers.Writer // the metadata writer: lower-case names
	mdOnAllow bool            // md writes something on an admission
	held      int             // the one Reported rule whose decision a metered call's tally holds; -1 for none

	maxPushback time.Duration // the longest wait a refusal pushes back; longer ones ask for no retry
}

// limits are the rates and caps a call is asked, and under WithPlans
// their plans.
type limits struct {
	rules []verdict.Rule
	caps  []*limiter.InFlight
	plans *verdict.Plans
}

// plan makes ls's plans, when the interceptor has them (on), keeping
// their resolutions in kept (nil: a Kept of their own).
func (ls *limits) plan(on bool, kept *verdict.Kept) error {
	if !on {
		return nil
	}
	p, err := verdict.NewPlans("WithPlans", ls.rules, ls.caps, kept)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	ls.plans = p
	return nil
}

// New returns an Interceptor that limits calls with l, keyed by the
// peer's address (PeerHost) unless WithKey says otherwise. Configuration
// errors (a nil limiter or option argument, too many limiters or caps, a
// method name that is none, a metadata name gRPC cannot send, a pushback
// bound out of range) are reported here, wrapping ErrInvalidOption,
// never by a call.
func New(l middleware.Limiter, opts ...Option) (*Interceptor, error) {
	if err := verdict.Check(l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return build(l, opts)
}

// NewInFlight returns an Interceptor that caps how many calls run at once
// per key with f alone, no rate: the in-flight cap of a service whose
// rates another interceptor of the chain applies (once: this one charges
// no rate), or that has none. The cap is keyed by the interceptor's key
// (WithKey, or PeerHost), and holds its slot while the handler runs:
// until a unary call returns, until a stream ends. Options that concern
// rates do not apply and are errors: WithLimiter, WithMethods, WithCost;
// a cap per plan: WithPlans. More caps: WithInFlight.
func NewInFlight(f *limiter.InFlight, opts ...Option) (*Interceptor, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: NewInFlight: InFlight is nil", ErrInvalidOption)
	}
	return build(nil, append([]Option{WithInFlight(f, nil)}, opts...))
}

// MustInFlight is NewInFlight that panics on error, for caps fixed in
// code.
func MustInFlight(f *limiter.InFlight, opts ...Option) *Interceptor {
	ic, err := NewInFlight(f, opts...)
	if err != nil {
		panic(err)
	}
	return ic
}

// build returns the Interceptor of l (nil: caps alone) and opts.
func build(l middleware.Limiter, opts []Option) (*Interceptor, error) {
	c := &config{capsOnly: l == nil}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option %d", ErrInvalidOption, i)
		}
		o(c)
	}
	if err := c.check(); err != nil {
		return nil, err
	}
	if c.key == nil {
		c.key = PeerHost()
	}
	for i := range c.extra {
		if c.extra[i].key == nil {
			c.extra[i].key = c.key // a metered limit's: the interceptor's key
		}
	}
	ic := &Interceptor{
		caps:    c.caps,
		key:     c.key,
		exempt:  c.exempt,
		cost:    c.cost,
		lookup:  c.lookup,
		onError: c.onError,
		onKey:   c.onKey,
		observe: c.observe,
		limits:  verdict.Limits{Shadow: c.shadow, FailOpen: c.failOpen, Refunds: len(c.caps) > 0},

		maxPushback: c.maxPushback(),
	}
	if l != nil {
		ic.rules = append([]rule{{lim: l, key: c.key}}, c.extra...)
	}
	if len(ic.rules) > maxLimiters {
		return nil, fmt.Errorf("%w: %d limiters, at most %d", ErrInvalidOption, len(ic.rules), maxLimiters)
	}
	for i := range ic.rules {
		m := ic.rules[i].rule.Meter // WithReported's, WithBytes'
		ic.rules[i].rule = verdict.NewRule(ic.rules[i].lim)
		if m != verdict.Fixed {
			if err := ic.meter(i, m); err != nil {
				return nil, err
			}
		}
		ic.own.rules = append(ic.own.rules, ic.rules[i].rule)
	}
	for i := range ic.rules {
		if _, ok := ic.rules[i].lim.(verdict.Refunder); !ok && (len(c.caps) > 0 || ic.limits.Settles) {
			why := "WithInFlight (a call a cap refuses is refunded)"
			if ic.limits.Settles {
				why = "WithReported or WithBytes (a call any limit refuses is charged by none)"
			}
			return nil, fmt.Errorf("%w: %s: limiter %d (policy %q) has no Refund method",
				ErrInvalidOption, why, i, ic.rules[i].lim.Policy().Name())
		}
	}
	for _, cr := range c.caps {
		ic.own.caps = append(ic.own.caps, cr.f)
	}
	var kept *verdict.Kept
	if c.kept != nil {
		kept = verdict.PlanCacheKept(c.kept)
	}
	if err := ic.own.plan(ic.lookup != nil, kept); err != nil {
		return nil, err
	}
	if len(c.methods) > 0 {
		ic.methods = make(map[string]*limits, len(c.methods))
		for m, l := range c.methods {
			ml := &limits{rules: slices.Clone(ic.own.rules), caps: ic.own.caps}
			ml.rules[0] = verdict.NewRule(l) // New's place: a fixed rule
			if err := ml.plan(ic.lookup != nil, kept); err != nil {
				return nil, fmt.Errorf("%w (%s)", err, m)
			}
			ic.methods[m] = ml
		}
	}
	if err := ic.checkDeclared(c); err != nil {
		return nil, err
	}
	w := c.headers
	if w == nil {
		var err error
		if w, err = headers.New(); err != nil {
			return nil, fmt.Errorf("grpclimit: default headers: %w", err)
		}
	}
	ic.md = w.Lower()
	ic.mdOnAllow = writesOnAllow(ic.md)
	ic.held = ic.limits.Describing(ic.own.rules, ic.md.WritesEveryDecision())
	if ic.observe != nil && len(ic.limits.Reported.List) > 0 {
		obs, units := ic.observe, ic.limits.Reported.List
		ic.limits.Reported.Misreported = func(ctx context.Context, unit string, cost int64) {
			method, _ := grpc.Method(ctx)
			var req *http.Request
			obs(middleware.Event{Request: stand(&req, ctx, method), Outcome: middleware.Misconfigured, Cost: cost,
				Err: fmt.Errorf("%w: Report(ctx, %q, cost): no limit around the handler counts %q (this interceptor's count %q)",
					middleware.ErrMisconfigured, unit, unit, units)})
		}
	}
	return ic, nil
}

// Unary returns the interceptor for unary methods, for
// grpc.UnaryInterceptor or grpc.ChainUnaryInterceptor.
func (ic *Interceptor) Unary() grpc.UnaryServerInterceptor { return ic.unary }

// Stream returns the interceptor for streaming methods, for
// grpc.StreamInterceptor or grpc.ChainStreamInterceptor. A stream is
// decided once, when it opens, at the cost WithCost gives it: its
// messages are not counted, except by a limit settled when the stream
// ends (WithReported, WithBytes). A cap's slot (WithInFlight) is held
// until the stream ends.
func (ic *Interceptor) Stream() grpc.StreamServerInterceptor { return ic.stream }

// unary takes a unary call through its life, as the HTTP middleware
// takes a request: identify, admit (verdict.Life.Admit, shared with it),
// answer a refusal or failure, describe (the metadata, set when the
// handler sends its header or returns), serve, settle (slots given back).
func (ic *Interceptor) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if ic.exempt != nil && ic.exempt(ctx, info.FullMethod) {
		return handler(ctx, req)
	}
	var l verdict.Life
	if err := ic.identify(ctx, info.FullMethod, &l); err != nil {
		verdict.Unserved(ctx) // the metered limits around settle at nothing
		return nil, err
	}
	l.Admit(&ic.limits) // a call it does not admit is Unserved
	if err := ic.answer(ctx, info.FullMethod, nil, &l); err != nil {
		return nil, err
	}
	hctx := ctx
	var t *verdict.Tally // the tally a metered call's handler reports to
	if l.Charged.Owed && ic.limits.Settles {
		t = new(verdict.Tally)
	}
	st := ic.describe(ctx, nil, &l, t)
	if st != nil {
		hctx = st
	}
	if t != nil {
		return ic.serveMetered(hctx, req, handler, st, &l, t)
	}
	if l.Held.Len() > 0 {
		defer l.Release()
	}
	resp, err := handler(hctx, req)
	if st != nil {
		st.flush()
	}
	return resp, err
}

// stream takes a streaming call through its life, as unary does; the
// call's slots are held until the handler returns: the stream has ended.
func (ic *Interceptor) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	if ic.exempt != nil && ic.exempt(ctx, info.FullMethod) {
		return handler(srv, ss)
	}
	var l verdict.Life
	if err := ic.identify(ctx, info.FullMethod, &l); err != nil {
		verdict.Unserved(ctx) // the metered limits around settle at nothing
		return err
	}
	l.Admit(&ic.limits) // a call it does not admit is Unserved
	if err := ic.answer(ctx, info.FullMethod, ss, &l); err != nil {
		return err
	}
	if l.Charged.Owed && ic.limits.Settles {
		ms := &meteredStream{ServerStream: ss, bytes: ic.limits.Bytes}
		st := ic.describe(ctx, ss, &l, &ms.tally)
		return ic.streamMetered(srv, ms, handler, st, &l)
	}
	st := ic.describe(ctx, ss, &l, nil)
	if l.Held.Len() > 0 {
		defer l.Release()
	}
	if st == nil {
		return handler(srv, ss)
	}
	err := handler(srv, st.wrapped)
	st.flush()
	return err
}

// identify resolves every key of the call, the rules' then the caps',
// its cost and the limiters that apply (WithMethods', then the plan's of
// WithPlans); an error is the call's answer: a key that could not be
// resolved, a plan that cannot apply.
func (ic *Interceptor) identify(ctx context.Context, method string, l *verdict.Life) error {
	l.Ctx = ctx
	ls := &ic.own
	if m, ok := ic.methods[method]; ok {
		ls = m
	}
	for i := range ic.rules {
		k, err := ic.rules[i].key(ctx, method)
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			return ic.keyFailed(ctx, method, ls.rules[i].Lim.Policy(), err)
		}
		l.Keys[i] = k
	}
	l.Rules, l.Caps = ls.rules, ls.caps
	own := "" // the interceptor's key, resolved once for the caps that have none
	for i, cr := range ic.caps {
		var (
			k   string
			err error
		)
		switch {
		case cr.key != nil:
			k, err = cr.key(ctx, method)
		case len(l.Rules) > 0:
			k = l.Keys[0]
		case own != "":
			k = own
		default:
			k, err = ic.key(ctx, method)
			own = k
		}
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			return ic.keyFailed(ctx, method, cr.f.Policy(), err)
		}
		l.CapKeys[i] = k
	}
	cost := int64(1)
	if ic.cost != nil {
		cost = ic.cost(ctx, method)
	}
	l.Price(cost, func(i int) (int64, bool) {
		if f := ic.rules[i].reserve; f != nil {
			return f(ctx, method), true
		}
		return 0, false
	})
	if ls.plans != nil {
		if err := ic.plan(ctx, method, ls.plans, l); err != nil {
			return err
		}
	}
	if ic.observe != nil {
		var req *http.Request // the stand-in, made on first use: one per call
		l.Observe = func(e verdict.Event) {
			ic.observe(middleware.Event{Request: stand(&req, ctx, method), Key: e.Key, Policy: e.Policy,
				Outcome: middleware.Outcome(e.Outcome), Decision: e.Decision, Err: e.Err, FailOpen: e.FailOpen, Duration: e.Duration, Cost: e.Cost})
		}
	}
	return nil
}

// plan sets the call's rates and caps to its plan's (WithPlans); an
// error is the call's answer. A lookup that failed leaves the call to
// the failure policy, its rates failing with the lookup's error; a plan
// that cannot apply is the server's mistake: INTERNAL (or the error
// handler's), reported as Misconfigured with an error wrapping
// middleware.ErrMisconfigured.
func (ic *Interceptor) plan(ctx context.Context, method string, plans *verdict.Plans, l *verdict.Life) error {
	plan, zone, err := ic.lookup(ctx, method)
	if errors.Is(err, keyfunc.ErrNoKey) || errors.Is(err, keyfunc.ErrMisconfigured) {
		// No caller to look up (INVALID_ARGUMENT), or a lookup that
		// cannot work where it is installed (INTERNAL): as a key
		// function's.
		return ic.keyFailed(ctx, method, plans.Policy(), err)
	}
	if err == nil {
		var res *verdict.Resolved
		if res, err = plans.Resolve(plan, zone); err == nil {
			l.Rules, l.Caps = res.Rules, res.Caps
			return nil
		}
		if !errors.Is(err, limiter.ErrClosed) {
			err = fmt.Errorf("%w: WithPlans: %w", middleware.ErrMisconfigured, err)
			if ic.observe != nil {
				var req *http.Request
				ic.observe(middleware.Event{Request: stand(&req, ctx, method), Key: l.Keys[0], Policy: plans.Policy(), Outcome: middleware.Misconfigured, Err: err})
			}
			return ic.failed(ctx, method, err, errInternal)
		}
	}
	// The lookup failed, or the limiters are closed: the failure policy's.
	res := plans.Failing(err, &l.Keys, l.CapKeys[0])
	l.Rules, l.Caps = res.Rules, res.Caps
	return nil
}

// answer returns the call's answer when admission stopped it: its
// client gone (CANCELED, or DEADLINE_EXCEEDED), a limit that could not
// decide (the error handler's, else UNAVAILABLE), a refusal
// (RESOURCE_EXHAUSTED); nil for a call to serve.
func (ic *Interceptor) answer(ctx context.Context, method string, ss grpc.ServerStream, l *verdict.Life) error {
	switch l.Answer {
	case verdict.Gone:
		return status.FromContextError(ctx.Err()).Err()
	case verdict.Fail:
		return ic.failed(ctx, method, l.Err, errUnavailable)
	case verdict.Deny:
		return ic.deny(ctx, ss, stateFrom(ctx), l)
	}
	return nil
}

// failed returns the answer to a call the server could not limit, err
// saying why: the error handler's (WithErrorHandler), or def.
func (ic *Interceptor) failed(ctx context.Context, method string, err, def error) error {
	if ic.onError != nil {
		if answer := ic.onError(ctx, method, err); answer != nil {
			return answer
		}
	}
	return def
}

// describe returns the state whose metadata the handler's call carries:
// made here by the outermost interceptor that decides, holding the most
// restrictive decision, the policies that applied, each rule's decision
// when the metadata describe every one (t, a metered call's tally, read
// for its Reported rules when the metadata are set) and the caps' slots;
// nil when there is nothing to send, or when an interceptor around this
// one made the state, which this one's decisions and slots join.
func (ic *Interceptor) describe(ctx context.Context, ss grpc.ServerStream, l *verdict.Life, t *verdict.Tally) *state {
	if !l.Decided && l.Held.Len() == 0 {
		return nil
	}
	if outer := stateFrom(ctx); outer != nil {
		outer.join(l, ic, t)
		return nil
	}
	if !ic.mdOnAllow {
		return nil
	}
	st := newState(ctx, ic, ss)
	st.join(l, ic, t)
	return st
}

// keyFailed reports a key function's failure and returns the call's
// answer: INVALID_ARGUMENT for a client that cannot be identified,
// INTERNAL (or the error handler's) for a key function that is
// misconfigured or failed otherwise.
func (ic *Interceptor) keyFailed(ctx context.Context, method string, p *limiter.Policy, err error) error {
	outcome, answer := keyOutcome(err)
	if ic.observe != nil {
		var req *http.Request
		ic.observe(middleware.Event{Request: stand(&req, ctx, method), Policy: p, Outcome: outcome, Err: err})
	}
	if outcome == middleware.KeyError {
		if ic.onKey != nil {
			if a := ic.onKey(ctx, method, err); a != nil {
				return a
			}
		}
		return answer
	}
	return ic.failed(ctx, method, err, answer)
}

// stand returns the observer's stand-in request for the call, making it
// on first use: one per call, and none without an observer.
func stand(req **http.Request, ctx context.Context, method string) *http.Request {
	if *req == nil {
		r := (&http.Request{
			Method: http.MethodPost, Proto: "HTTP/2.0", ProtoMajor: 2,
			URL: &url.URL{Path: method}, RequestURI: method, Pattern: method,
		}).WithContext(ctx)
		*req = r
	}
	return *req
}
