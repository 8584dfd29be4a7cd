package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A Limiter decides whether a key may spend a cost now. *limiter.Limiter
// satisfies it; so does any wrapper with the same two methods.
//
// *limiter.Limiter also has Clock() limiter.Clock and AllowAt(ctx, key,
// cost, now time.Time), and a wrapper may too: the middleware then reads
// that clock once per decision, decides with AllowAt at that instant, times
// the decision for the observer by the same clock (a second reading, only
// when an observer is set), and dates with it the
// headers of a decision that carries no instant of its own. So a test that
// sets the limiter's clock (limitertest.Clock) sets the middleware's. A
// Limiter without them is asked with Allow and timed by the system clock,
// and its decisions, which limiter.Decide did not make, are dated by the
// system clock. A decision without a Policy is taken to be of the
// limiter's Policy, in the headers and for DecisionFrom.
type Limiter interface {
	// Allow decides and charges, as limiter.Limiter.Allow does: a
	// refusal is a Decision with Allowed false and a nil error.
	Allow(ctx context.Context, key string, cost int64) (limiter.Decision, error)
	// Policy returns the policy the limiter applies; its name labels
	// observations.
	Policy() *limiter.Policy
}

var (
	_ Limiter          = (*limiter.Limiter)(nil)
	_ verdict.Clocked  = (*limiter.Limiter)(nil)
	_ verdict.Refunder = (*limiter.Limiter)(nil)
)

// maxLimiters is the most limiters one middleware applies: the one given
// to New and those added with WithLimiter.
const maxLimiters = verdict.MaxRules

// A rule is one limiter and the key it is applied to.
type rule struct {
	lim     Limiter
	key     keyfunc.Func
	own     bool                        // key is the middleware's, resolved once per request
	rule    verdict.Rule                // lim, as the shared admission asks it
	reserve func(r *http.Request) int64 // a reported rule's reservation (WithReported); nil: 1
}

// A handler is the middleware wrapped around one next handler. Everything
// it reads is fixed by New, so it is safe for concurrent use.
type handler struct {
	cfg  *config
	next http.Handler
}

// New returns middleware that limits requests with l, keyed by the client's
// remote host unless WithKey says otherwise. Configuration errors (a nil
// limiter or option argument, too many limiters, a bad header writer) are
// reported here, wrapping ErrInvalidOption, never by a request.
func New(l Limiter, opts ...Option) (func(http.Handler) http.Handler, error) {
	if err := verdict.Check(l); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
	}
	return build(l, opts)
}

// InFlight returns middleware that caps how many requests run the
// wrapped handler at once per key with f alone, no rate, in one line:
//
//	r.With(middleware.MustInFlight(exports)).Get("/export", export)
//
// on a route of a group whose rates another middleware applies (which
// charges them once: this one charges no rate), or on a route that has
// none. The cap is keyed by the middleware's key (WithKey, or the remote
// host), and works as WithInFlight says, but that a refusal here cannot
// return the charges of the middlewares around it: a request refused by
// the cap stays charged to the group's rates, as a request refused by any
// inner middleware does. Its slots join the headers of the middlewares
// around it (the draft fields list them); alone, with the draft fields
// on, it writes its own. Options that concern rates do not apply and are
// errors: WithLimiter, WithCost, WithCountIf. More caps: WithInFlight;
// a cap per plan: WithPlans.
func InFlight(f *limiter.InFlight, opts ...Option) (func(http.Handler) http.Handler, error) {
	if f == nil {
		return nil, fmt.Errorf("%w: InFlight: InFlight is nil", ErrInvalidOption)
	}
	return build(nil, append([]Option{WithInFlight(f, nil)}, opts...))
}

// MustInFlight is InFlight that panics on error, for caps fixed in code.
func MustInFlight(f *limiter.InFlight, opts ...Option) func(http.Handler) http.Handler {
	mw, err := InFlight(f, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// build returns the middleware of l (nil: caps alone) and opts.
func build(l Limiter, opts []Option) (func(http.Handler) http.Handler, error) {
	c, err := configure(l, opts)
	if err != nil {
		return nil, err
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			// As http.Handle does: a programming error, found when the
			// route is built rather than by the first request.
			panic("middleware: nil next handler")
		}
		return &handler{cfg: c, next: next}
	}, nil
}

// configure checks and settles the configuration of l (nil: caps
// alone) and opts, for the middleware and its usage (NewUsageHandler).
func configure(l Limiter, opts []Option) (*config, error) {
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
		k, err := keyfunc.RemoteHost()
		if err != nil {
			return nil, fmt.Errorf("middleware: default key: %w", err)
		}
		c.key = k
	}
	if l != nil {
		c.rules = append([]rule{{lim: l, key: c.key, own: true}}, c.extra...)
	}
	if len(c.rules) > maxLimiters {
		return nil, fmt.Errorf("%w: %d limiters, at most %d", ErrInvalidOption, len(c.rules), maxLimiters)
	}
	c.limits = verdict.Limits{Shadow: c.shadow, FailOpen: c.failOpen, Refunds: c.countIf != nil || len(c.caps) > 0}
	for _, cr := range c.caps {
		c.capLimits = append(c.capLimits, cr.f)
	}
	for i := range c.rules {
		m := c.rules[i].rule.Meter // WithReported's, WithBytes'
		c.rules[i].rule = verdict.NewRule(c.rules[i].lim)
		if m != verdict.Fixed {
			if err := c.meter(i, m); err != nil {
				return nil, err
			}
		}
		c.shared = append(c.shared, c.rules[i].rule)
	}
	for i := range c.rules {
		if _, ok := c.rules[i].lim.(verdict.Refunder); !ok && (c.limits.Refunds || c.limits.Settles) {
			why := "WithCountIf"
			switch {
			case c.limits.Settles:
				why = "WithReported or WithBytes (a request any limit refuses is charged by none)"
			case c.countIf == nil:
				why = "WithInFlight (a request a cap refuses is refunded)"
			}
			return nil, fmt.Errorf("%w: %s: limiter %d (policy %q) has no Refund method", ErrInvalidOption, why, i, c.rules[i].lim.Policy().Name())
		}
	}
	if c.lookup != nil {
		var kept *verdict.Kept
		if c.planCache != nil {
			kept = c.planCache.kept
		}
		p, err := verdict.NewPlans("WithPlans", c.shared, c.capLimits, kept)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
		c.plans = p
	}
	if err := c.checkDeclared(); err != nil {
		return nil, err
	}
	if c.headers == nil {
		w, err := headers.New()
		if err != nil {
			return nil, fmt.Errorf("middleware: default headers: %w", err)
		}
		c.headers = w
	}
	c.held = c.limits.Describing(c.shared, c.headers.WritesEveryDecision())
	if c.observe != nil && len(c.limits.Reported.List) > 0 {
		obs, units := c.observe, c.limits.Reported.List
		c.limits.Reported.Misreported = func(_ context.Context, unit string, cost int64) {
			obs(Event{Outcome: Misconfigured, Cost: cost, Err: misreported(unit, units)})
		}
	}
	if c.denied == nil {
		c.deny = c.headers.WriteDenied
	} else {
		custom := c.denied
		c.deny = func(w http.ResponseWriter, r *http.Request, d *limiter.Decision, all ...*limiter.Decision) {
			c.headers.Write(w.Header(), d, all...)
			custom(w, r, d)
		}
	}
	if c.onError == nil {
		c.onError = internalError
	}
	if c.onKeyError == nil {
		c.onKeyError = badRequest
	}
	return c, nil
}

// MustNew is New that panics on error, for middleware whose limiter and
// options are fixed in code:
//
//	login := middleware.MustNew(limiter.MustNew(limiter.MustPolicy("login", limiter.PerMinute(5))))
func MustNew(l Limiter, opts ...Option) func(http.Handler) http.Handler {
	mw, err := New(l, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

// ServeHTTP takes a request through its life, one phase after another:
// identify (every key first, so that a request whose identity is
// incomplete charges nothing), admit (the rates in order up to the first
// refusal, enforced or shadow, then the caps: verdict.Life.Admit, which
// the gRPC interceptor shares), describe (the headers of the decision,
// joined with those of the middlewares around it), serve (the handler),
// and settle (refunds by status, slots given back).
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.cfg
	var own ownKey
	if c.exempt != nil && c.exempt(r, own.of(c.key, r)) {
		h.next.ServeHTTP(w, r)
		return
	}
	var (
		l      verdict.Life
		failed unidentified
	)
	// The limits are asked once: a request that cannot be identified
	// is answered as unserved, as one they do not admit (Admit marks
	// those), so that the metered limits around settle at nothing.
	if !h.identify(r, &l, &own, &failed) {
		l.Unserved()
		h.keyFailed(w, r, &failed)
		return
	}
	l.Admit(&c.limits)
	switch l.Answer {
	case verdict.Gone:
		clientGone(w)
		return
	case verdict.Fail:
		c.onError(w, r, l.Err)
		return
	case verdict.Deny:
		h.deny(w, r, &l)
		return
	}
	r, rec, m := h.describe(w, r, &l)
	if l.Held.Len() == 0 && (!l.Decided || c.countIf == nil) && !l.Charged.Owed {
		h.next.ServeHTTP(w, r) // nothing to settle
		return
	}
	h.serve(w, r, rec, m, &l)
}

// ownKey is the middleware's key of one request (WithKey's, or the
// default), resolved once for WithExempt, every rule and cap whose key
// it is, and the observer.
type ownKey struct {
	key  string
	err  error
	done bool
}

// of returns the key f resolves for r, resolving it on first use: ""
// when it could not (get says why).
func (o *ownKey) of(f keyfunc.Func, r *http.Request) string {
	k, _ := o.get(f, r)
	return k
}

// get returns the key f resolves for r, resolving it on first use, or
// why there is none (an empty key is errEmptyKey).
func (o *ownKey) get(f keyfunc.Func, r *http.Request) (string, error) {
	if !o.done {
		o.key, o.err = f(r)
		o.done = true
		if o.err == nil && o.key == "" {
			o.err = errEmptyKey
		}
		if o.err != nil {
			o.key = ""
		}
	}
	return o.key, o.err
}

// identify resolves every key of the request, the rules' then the caps'
// (the middleware's own once, in own), its cost and, with WithPlans, the
// limits of its plan; false when it has answered the request: a key that
// could not be resolved, a plan that cannot apply.
func (h *handler) identify(r *http.Request, l *verdict.Life, own *ownKey, failed *unidentified) bool {
	c := h.cfg
	l.Ctx = r.Context()
	for i := range c.rules {
		var (
			k   string
			err error
		)
		if c.rules[i].own {
			k, err = own.get(c.key, r)
		} else if k, err = c.rules[i].key(r); err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			*failed = unidentified{policy: c.rules[i].lim.Policy(), err: err}
			return false
		}
		l.Keys[i] = k
	}
	l.Rules, l.Caps = c.shared, c.capLimits
	for i := range c.caps {
		var (
			k   string
			err error
		)
		if c.caps[i].key == nil {
			k, err = own.get(c.key, r)
		} else if k, err = c.caps[i].key(r); err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			*failed = unidentified{policy: c.caps[i].f.Policy(), err: err}
			return false
		}
		l.CapKeys[i] = k
	}
	cost := int64(1)
	if c.cost != nil {
		cost = c.cost(r)
	}
	l.Price(cost, func(i int) (int64, bool) {
		if f := c.rules[i].reserve; f != nil {
			return f(r), true
		}
		return 0, false
	})
	if c.plans != nil && !h.plan(r, l, failed) {
		return false
	}
	if c.observe != nil {
		l.Observe = func(e verdict.Event) {
			c.observe(Event{Request: r, Key: e.Key, Policy: e.Policy, Outcome: Outcome(e.Outcome),
				Decision: e.Decision, Err: e.Err, FailOpen: e.FailOpen, Duration: e.Duration, Cost: e.Cost})
		}
	}
	return true
}

// deny answers a refusal: the headers of the refusal, with, when the
// door describes every decision, those of every limit that applied (the
// middlewares' around this one, as they stand, and this one's rates
// before the refusal, read as charged nothing once refunded), then the
// 429. The refusal is a copy, so that only a refusal moves a Decision
// to the heap: the denied handler is a func value the compiler cannot
// see through.
func (h *handler) deny(w http.ResponseWriter, r *http.Request, l *verdict.Life) {
	c := h.cfg
	d := l.Best
	if !c.limits.Every {
		c.deny(w, r, &d)
		return
	}
	// One allocation for what a refusal's answer lists: the copies keep
	// the life on its door's stack.
	dn := new(deniedAnswer)
	dn.d = d
	n := 0
	if st := stateFrom(r.Context()); st != nil {
		var kept [verdict.MaxPolicies]*limiter.Decision
		_, kept, n = st.v.Describe(&dn.room)
		copy(dn.ptrs[:], kept[:n])
	}
	all := dn.ptrs[:n]
	for i := range l.Charged.N {
		dn.mine[i] = l.Charged.D[i]
		all = append(all, &dn.mine[i])
	}
	all = append(all, &dn.d)
	c.deny(w, r, &dn.d, all...)
}

// deniedAnswer is what the answer to a refusal lists, when the door
// describes every decision: the refusal, the decisions of the
// middlewares around (room), this one's rates before the refusal
// (mine), and pointers to them all.
type deniedAnswer struct {
	d    limiter.Decision
	room [verdict.MaxPolicies]limiter.Decision
	mine [verdict.MaxRules]limiter.Decision
	ptrs [verdict.MaxPolicies + verdict.MaxRules + 1]*limiter.Decision
}

// answer writes the headers of what admitted the request, as its state
// holds it now: the most restrictive decision of every middleware (with,
// for a metered request, t its innermost tally, the decisions held there
// read at the cost reported so far), when the doors keep them every
// decision (each Reported one read so too), and the caps' slots (draft
// fields alone describe those).
func (c *config) answer(h http.Header, st *state, t *verdict.Tally) {
	if !c.limits.Every {
		var best limiter.Decision
		if t != nil {
			best = st.v.DescribedWith(t)
		} else {
			best = st.v.Described()
		}
		c.headers.WriteBuffer(&st.hdr, h, &best)
	} else {
		var room [verdict.MaxPolicies]limiter.Decision
		best, all, n := st.v.Describe(&room)
		verdict.WriteAll(c.headers, h, &best, all[:n], st.caps)
	}
}

// describe joins what admitted the request to the request's state (made
// here by the outermost middleware that decides, in one allocation with
// the request the handler gets): its most restrictive decision, every
// policy that applied, each rule's decision when the headers describe
// every one (Limits.Every), and the caps' slots; and writes the headers
// (answer), or, for a request with metered limits (WithReported,
// WithBytes), has them written at the response's first byte, so that a
// handler that reports its cost before it writes gets headers at that
// cost. It returns the request to serve, the status recorder made with
// the state, if any, and the request's meter, if metered. A request
// that no rate decided (every one failed open, or a middleware of caps
// alone) makes no state: its caps' slots join the state of the
// middlewares around it, if any, and are described with theirs, else
// alone.
func (h *handler) describe(w http.ResponseWriter, r *http.Request, l *verdict.Life) (*http.Request, *statusRecorder, *meter) {
	c := h.cfg
	if !l.Decided {
		if l.Held.Len() == 0 {
			return r, nil, nil
		}
		held := &heldCaps{Caps: l.Held}
		if st := stateFrom(l.Ctx); st != nil {
			// The headers are written anew, the rates' then every cap's,
			// as each middleware of a stack writes them.
			held.Prev, st.caps = st.caps, held
			c.answer(w.Header(), st, nil)
			return r, nil, nil
		}
		verdict.WriteAll(c.headers, w.Header(), nil, nil, held)
		return r, nil, nil
	}
	var (
		rec   *statusRecorder
		spare *heldCaps // room for the caps' slots in the state's allocation
		m     *meter
	)
	metered := c.limits.Settles && l.Charged.Owed
	best, hold := &l.Best, -1
	var others limiter.Decision
	if metered && c.held >= 0 {
		hold = l.HeldOut(c.held, &others)
		if hold >= 0 && l.Best.Policy == l.Charged.D[hold].Policy {
			best = &others // the held decision is read at the first byte
		}
	}
	st := stateFrom(l.Ctx)
	if st == nil {
		st, r, rec, spare, m = newState(r, best, c.countIf != nil, len(c.caps) > 0, metered, &c.limits.Reported)
	} else if metered {
		m, r = newMeteredRequest(r, &c.limits.Reported)
	}
	if hold >= 0 {
		rl := l.RuleOf(hold)
		m.tally.Hold(&l.Charged.D[hold], l.Costs[c.held], slices.Index(c.limits.Reported.List, rl.Unit))
	}
	keep := c.limits.Every
	st.v.Merge(best, keep) // a no-op on a state made here, with best
	st.v.Apply(l.RatesApplied(), keep)
	if keep {
		for i := range l.Charged.N {
			e := verdict.Entry{D: l.Charged.D[i]}
			if rl := l.RuleOf(i); m != nil && rl.Meter == verdict.Reported {
				e.Reserved, e.Unit, e.Tally = l.Costs[l.Charged.Rule[i]], rl.Unit, &m.tally
			}
			st.v.Keep(e)
		}
	}
	if l.Held.Len() > 0 {
		held := spare
		if held == nil {
			held = new(heldCaps)
		}
		held.Caps, held.Prev, st.caps = l.Held, st.caps, held
	}
	if m == nil {
		c.answer(w.Header(), st, nil)
		return r, rec, nil
	}
	return r, rec, m
}

// serve calls the handler, and settles the request's life once it has
// returned, by any path: a return, a panic, a client that left (the
// handler returns when it notices), a streamed response once it ends.
// A request with metered limits to settle (WithReported, WithBytes) has
// its meter (m): the tally its handler reports to (Report), in its
// context, and a ResponseWriter that counts the bytes it sends and
// writes the headers at its first byte.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, rec *statusRecorder, m *meter, l *verdict.Life) {
	c := h.cfg
	counted := l.Decided && c.countIf != nil

	if m != nil {
		m.tally.Arm(l)
	}
	if counted || m != nil {
		if outer, ok := w.(*statusRecorder); ok {
			// One recorder per request suffices: an inner middleware
			// that counts by status, or meters, uses the one an outer
			// middleware installed.
			rec = outer
		} else {
			if rec == nil && m != nil {
				rec = &m.rec
			}
			if rec == nil {
				rec = new(statusRecorder)
			}
			rec.ResponseWriter, rec.noBody = w, r.Method == http.MethodHead
			w = rec
		}
		if m != nil {
			// The innermost metered middleware writes the headers at the
			// first byte, from the state every middleware joined.
			rec.first, rec.t, rec.described = c, &m.tally, false
		}
	}
	returned := false
	defer func() { h.settle(rec, m, l, counted, returned) }()
	h.next.ServeHTTP(w, r)
	returned = true
}

// settle ends the request's life: a charge whose response does not count
// (WithCountIf) is returned; the headers of a metered request that wrote
// nothing are written (at the costs reported, before the server sends
// them); every metered limit is settled at what the handler reported (at
// its reservation if it reported nothing) or at the bytes the response
// sent; every slot held is given back. A handler that panicked (returned
// false), or hijacked the connection, stays charged by status: its
// answer is unknown; it is settled and its slots go back all the same.
func (h *handler) settle(rec *statusRecorder, m *meter, l *verdict.Life, counted, returned bool) {
	if counted && returned {
		if status, known := rec.final(); known && !h.cfg.countIf(status) {
			l.Refund()
		}
	}
	if m != nil {
		rec.firstByte()
		l.Settle(&m.tally, rec.bytes)
	}
	l.Release()
}

// An unidentified request is one the door answers without asking its
// limits: its key, or its plan, could not be found (identify says why).
type unidentified struct {
	policy *limiter.Policy
	err    error
	key    string // the request's key, for a plan that cannot apply
	plan   bool   // a plan that cannot apply: the server's mistake
}

// keyFailed answers a request whose key for the limiter or cap of
// policy u.policy could not be found: 400 for a client that cannot be
// identified (an error wrapping keyfunc.ErrNoKey), the error handler's
// 500 for a key function the server installed where it cannot work, and
// for any other error, which is the key function's own failure (its
// database is down, say) and not the client's; and a request whose plan
// cannot apply (u.plan): the error handler's 500, Misconfigured.
func (h *handler) keyFailed(w http.ResponseWriter, r *http.Request, u *unidentified) {
	c := h.cfg
	outcome, answer := KeyError, c.onKeyError
	switch {
	case u.plan || errors.Is(u.err, keyfunc.ErrMisconfigured):
		outcome, answer = Misconfigured, c.onError
	case !errors.Is(u.err, keyfunc.ErrNoKey):
		outcome, answer = KeyFailed, c.onError
	}
	if c.observe != nil {
		c.observe(Event{Request: r, Key: u.key, Policy: u.policy, Outcome: outcome, Err: u.err})
	}
	answer(w, r, u.err)
}

// plan sets the request's rates and caps to its plan's (WithPlans);
// false when it has answered the request. A lookup error wrapping
// keyfunc.ErrNoKey or keyfunc.ErrMisconfigured is answered as a key
// function's; any other leaves the request to the failure policy, its
// rates failing with the lookup's error; a plan that cannot apply (none,
// limits that do not fit, an unknown zone) is the server's mistake,
// reported as Misconfigured with an error wrapping ErrMisconfigured and
// answered by the error handler (500).
func (h *handler) plan(r *http.Request, l *verdict.Life, failed *unidentified) bool {
	c := h.cfg
	plan, zone, err := c.lookup(r)
	if errors.Is(err, keyfunc.ErrNoKey) || errors.Is(err, keyfunc.ErrMisconfigured) {
		// No customer to look up (400), or a lookup that cannot work
		// where it is installed (500): as a key function's.
		*failed = unidentified{policy: c.plans.Policy(), err: err}
		return false
	}
	if err == nil {
		var res *verdict.Resolved
		if res, err = c.plans.Resolve(plan, zone); err == nil {
			l.Rules, l.Caps = res.Rules, res.Caps
			return true
		}
		if !errors.Is(err, limiter.ErrClosed) {
			*failed = unidentified{policy: c.plans.Policy(), key: l.Keys[0], plan: true,
				err: fmt.Errorf("%w: WithPlans: %w", ErrMisconfigured, err)}
			return false
		}
	}
	// The lookup failed, or the limiters are closed: the failure policy's.
	res := c.plans.Failing(err, &l.Keys, l.CapKeys[0])
	l.Rules, l.Caps = res.Rules, res.Caps
	return true
}

// internalError is the default error handler (WithErrorHandler): the error's text may name
// hosts, keys or internals, so the client is told nothing of it.
func internalError(w http.ResponseWriter, _ *http.Request, _ error) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

// statusClientClosed is nginx's 499, "client closed request": not a
// standard status, but the one access logs and their readers know for a
// client that left before its answer.
const statusClientClosed = 499

// clientGone answers a request whose client left before the limiter
// decided: nobody will read the answer, but the server and the access log
// need a status, and an implicit 200 would say the request was served.
func clientGone(w http.ResponseWriter) {
	w.WriteHeader(statusClientClosed)
}

// badRequest is the default key error handler.
func badRequest(w http.ResponseWriter, _ *http.Request, _ error) {
	http.Error(w, "Bad Request: the client could not be identified for rate limiting", http.StatusBadRequest)
}
