package middleware

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

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

// A Refunder is a Limiter that can return a charge, as *limiter.Limiter
// can: WithCountIf needs every limiter of the middleware to be one.
type Refunder interface {
	// Refund returns cost to the windows d charged for key, while each
	// is still current and never below zero, as
	// limiter.Limiter.Refund does.
	Refund(ctx context.Context, key string, cost int64, d limiter.Decision) error
}

var (
	_ Limiter        = (*limiter.Limiter)(nil)
	_ clockedLimiter = (*limiter.Limiter)(nil)
	_ Refunder       = (*limiter.Limiter)(nil)
)

// A clockedLimiter says which clock its decisions are made by and decides
// at an instant read from it, as *limiter.Limiter does.
type clockedLimiter interface {
	Clock() limiter.Clock
	AllowAt(ctx context.Context, key string, cost int64, now time.Time) (limiter.Decision, error)
}

// maxLimiters is the most limiters one middleware applies: the one given
// to New and those added with WithLimiter.
const maxLimiters = 4

// A rule is one limiter and the key it is applied to.
type rule struct {
	lim     Limiter
	key     keyfunc.Func
	clocked clockedLimiter // lim, if it is one; nil otherwise
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
	c := &config{}
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
	c.rules = append([]rule{{lim: l, key: c.key}}, c.extra...)
	if len(c.rules) > maxLimiters {
		return nil, fmt.Errorf("%w: %d limiters, at most %d", ErrInvalidOption, len(c.rules), maxLimiters)
	}
	c.refunds = c.countIf != nil || len(c.caps) > 0
	for i := range c.rules {
		c.rules[i].clocked, _ = c.rules[i].lim.(clockedLimiter)
		if _, ok := c.rules[i].lim.(Refunder); !ok && c.refunds {
			why := "WithCountIf"
			if c.countIf == nil {
				why = "WithInFlight (a request a cap refuses is refunded)"
			}
			return nil, fmt.Errorf("%w: %s: limiter %d (policy %q) has no Refund method", ErrInvalidOption, why, i, c.rules[i].lim.Policy().Name())
		}
	}
	if c.headers == nil {
		w, err := headers.New()
		if err != nil {
			return nil, fmt.Errorf("middleware: default headers: %w", err)
		}
		c.headers = w
	}
	if c.denied == nil {
		c.deny = c.headers.WriteDenied
	} else {
		custom := c.denied
		c.deny = func(w http.ResponseWriter, r *http.Request, d *limiter.Decision, applied ...*limiter.Policy) {
			c.headers.Write(w.Header(), d, applied...)
			custom(w, r, d)
		}
	}
	if c.onError == nil {
		c.onError = internalError
	}
	if c.onKeyError == nil {
		c.onKeyError = badRequest
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

// ServeHTTP resolves every key first, so that a request whose identity is
// incomplete charges nothing, then decides limiter by limiter up to the
// first refusal, enforced or shadow. The decisions join those of the
// middlewares around it (see state) before the headers are written.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.cfg
	if c.exempt != nil && c.exempt(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	var keys [maxLimiters]string
	for i := range c.rules {
		k, err := c.rules[i].key(r)
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			h.keyFailed(w, r, c.rules[i].lim.Policy(), err)
			return
		}
		keys[i] = k
	}
	var capKeys [maxCaps]string
	if len(c.caps) > 0 && !h.capKeys(w, r, &keys, &capKeys) {
		return
	}
	cost := int64(1)
	if c.cost != nil {
		cost = c.cost(r)
	}
	ctx := r.Context()
	var (
		best     limiter.Decision
		decided  bool
		applied  [maxLimiters + maxCaps]*limiter.Policy // the policies that decided, in order
		nApplied int
		charged  charges // for WithCountIf and WithInFlight
		stopped  bool    // a shadow refusal: enforcing would ask no more
	)
	for i := range c.rules {
		lim, clocked := c.rules[i].lim, c.rules[i].clocked
		if i == 0 && c.resolve != nil {
			if rl := c.resolve(r); rl != nil {
				if err := verdict.Check(rl); err != nil {
					h.resolverFailed(w, r, keys[i], err)
					return
				}
				lim = rl
				clocked, _ = rl.(clockedLimiter)
			}
		}
		d, at, took, err := allow(ctx, lim, clocked, keys[i], cost, c.observe != nil)
		outcome := outcomeOf(ctx, d, err, c.shadow)
		if err == nil && d.NumWindows() == 0 && d.DecidedAt().IsZero() {
			// A custom Limiter's decision, built field by field: dated
			// here, by the limiter's clock when it has one, so that its
			// headers are too.
			if at.IsZero() {
				at = time.Now()
			}
			d = limiter.Dated(d, at)
		}
		if err == nil && d.Policy == nil {
			d.Policy = lim.Policy()
		}
		if c.observe != nil {
			c.observe(Event{
				Request: r, Key: keys[i], Policy: lim.Policy(), Outcome: outcome,
				Decision: d, Err: err, FailOpen: outcome == Error && c.failOpen,
				Duration: took,
			})
		}
		switch outcome {
		case Canceled:
			clientGone(w)
			return
		case Error:
			if c.failOpen {
				continue
			}
			c.onError(w, r, err)
			return
		case Denied:
			applied[nApplied] = d.Policy
			nApplied++
			// A copy, so that only a refusal moves a Decision to the
			// heap: the handler is a func value the compiler cannot see
			// through.
			refused := d
			c.deny(w, r, &refused, stateFrom(ctx).with(applied[:nApplied])...)
			return
		}
		applied[nApplied] = d.Policy
		nApplied++
		if !decided || moreRestrictive(&d, &best) {
			best, decided = d, true
		}
		if outcome == ShadowDenied {
			// Enforcing would have refused here and asked no later
			// limiter, so shadow mode charges and reports nothing
			// more: its counts and outcomes are the ones enforcing
			// would make, not inflated by requests a refusal would
			// have stopped.
			stopped = true
			break
		}
		if c.refunds {
			charged.add(i, lim, &d)
		}
	}
	var (
		st    *state
		rec   *statusRecorder
		spare *heldCaps // room for the caps' slots in st's allocation
	)
	if decided {
		if st = stateFrom(ctx); st == nil {
			st, r, rec, spare = newState(r, &best, c.countIf != nil, len(c.caps) > 0)
		}
	}
	var held *heldCaps
	if len(c.caps) > 0 && !stopped {
		var answered bool
		if held, answered = h.acquire(w, r, ctx, &capKeys, &keys, cost, &charged, &applied, nApplied, spare); answered {
			return
		}
	}
	if decided {
		st.merge(&best) // a no-op on a state made here, with best
		st.apply(applied[:nApplied])
		hd := st.described()
		c.headers.WriteBuffer(&st.hdr, w.Header(), &hd, st.applied()...)
		if held != nil {
			held.prev, st.caps = st.caps, held
		}
		if st.caps != nil {
			writeCaps(c.headers, w.Header(), st.caps)
		}
	}
	if held != nil {
		h.serveHolding(w, r, rec, ctx, &keys, cost, &charged, held, decided)
		return
	}
	if decided && c.countIf != nil {
		h.serveCounted(w, r, rec, ctx, &keys, cost, &charged)
		return
	}
	h.next.ServeHTTP(w, r)
}

// keyFailed answers a request whose key for the limiter or cap of
// policy p could not be found: 400 for a client that cannot be
// identified (an error wrapping keyfunc.ErrNoKey), the error handler's
// 500 for a key function the server installed where it cannot work, and
// for any other error, which is the key function's own failure (its
// database is down, say) and not the client's.
func (h *handler) keyFailed(w http.ResponseWriter, r *http.Request, p *limiter.Policy, err error) {
	c := h.cfg
	outcome, answer := KeyError, c.onKeyError
	switch {
	case errors.Is(err, keyfunc.ErrMisconfigured):
		outcome, answer = Misconfigured, c.onError
	case !errors.Is(err, keyfunc.ErrNoKey):
		outcome, answer = KeyFailed, c.onError
	}
	if c.observe != nil {
		c.observe(Event{Request: r, Policy: p, Outcome: outcome, Err: err})
	}
	answer(w, r, err)
}

// resolverFailed answers a request whose resolver (WithResolver)
// returned a limiter that cannot be asked, a typed nil say (a missed map
// lookup of *limiter.Limiter values): the server's mistake, reported as
// Misconfigured with an error wrapping ErrMisconfigured and answered by
// the error handler (500), never a panic.
func (h *handler) resolverFailed(w http.ResponseWriter, r *http.Request, key string, why error) {
	c := h.cfg
	err := fmt.Errorf("%w: WithResolver returned a limiter that cannot be asked: %v", ErrMisconfigured, why)
	if c.observe != nil {
		c.observe(Event{Request: r, Key: key, Policy: c.rules[0].lim.Policy(), Outcome: Misconfigured, Err: err})
	}
	c.onError(w, r, err)
}

// allow asks lim for one decision, at one reading of its clock when it
// has one: verdict.Ask, which the gRPC interceptor shares.
func allow(ctx context.Context, lim Limiter, clocked clockedLimiter, key string, cost int64, timed bool) (d limiter.Decision, at time.Time, took time.Duration, err error) {
	return verdict.Ask(ctx, lim, clocked, key, cost, timed)
}

// outcomeOf names what a decision made of the request. An error with the
// request's context done is the client's leaving (or the server's
// deadline), not a store failure: Canceled.
func outcomeOf(ctx context.Context, d limiter.Decision, err error, shadow bool) Outcome {
	switch {
	case err != nil && ctx.Err() != nil:
		return Canceled
	case err != nil:
		return Error
	case d.Allowed:
		return Allowed
	case shadow:
		return ShadowDenied
	default:
		return Denied
	}
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
