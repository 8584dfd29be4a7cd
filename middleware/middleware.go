package middleware

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A Limiter decides whether a key may spend a cost now. *limiter.Limiter
// satisfies it; so does any wrapper with the same two methods.
type Limiter interface {
	// Allow decides and charges, as limiter.Limiter.Allow does: a
	// refusal is a Decision with Allowed false and a nil error.
	Allow(ctx context.Context, key string, cost int64) (limiter.Decision, error)
	// Policy returns the policy the limiter applies; its name labels
	// observations.
	Policy() *limiter.Policy
}

var _ Limiter = (*limiter.Limiter)(nil)

// MaxLimiters is the most limiters one middleware applies: the one given
// to New and those added with WithLimiter.
const MaxLimiters = 4

// A rule is one limiter and the key it is applied to.
type rule struct {
	lim Limiter
	key keyfunc.Func
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
	if l == nil || l.Policy() == nil {
		return nil, fmt.Errorf("%w: limiter is nil or has no policy", ErrInvalidOption)
	}
	c := &config{clock: limiter.SystemClock{}}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		o(c)
	}
	if c.err != nil {
		return nil, c.err
	}
	if c.key == nil {
		k, err := keyfunc.RemoteHost()
		if err != nil {
			return nil, fmt.Errorf("middleware: default key: %w", err)
		}
		c.key = k
	}
	c.rules = append([]rule{{lim: l, key: c.key}}, c.extra...)
	if len(c.rules) > MaxLimiters {
		return nil, fmt.Errorf("%w: %d limiters, at most %d", ErrInvalidOption, len(c.rules), MaxLimiters)
	}
	if c.headers == nil {
		w, err := headers.New()
		if err != nil {
			return nil, fmt.Errorf("middleware: default headers: %w", err)
		}
		c.headers = w
	}
	if c.denied == nil {
		c.denied = c.headers.WriteDenied
	} else {
		custom := c.denied
		c.denied = func(w http.ResponseWriter, r *http.Request, d *limiter.Decision) {
			c.headers.Write(w.Header(), d)
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

// ServeHTTP resolves every key first, so that a request whose identity is
// incomplete charges nothing, then decides limiter by limiter up to the
// first refusal, enforced or shadow.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := h.cfg
	if c.exempt != nil && c.exempt(r) {
		h.next.ServeHTTP(w, r)
		return
	}
	var keys [MaxLimiters]string
	for i := range c.rules {
		k, err := c.rules[i].key(r)
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			if c.observe != nil {
				c.observe(Event{Request: r, Policy: c.rules[i].lim.Policy(), Outcome: KeyError, Err: err})
			}
			c.onKeyError(w, r, err)
			return
		}
		keys[i] = k
	}
	cost := int64(1)
	if c.cost != nil {
		cost = c.cost(r)
	}
	ctx := r.Context()
	var best limiter.Decision
	decided := false
	for i := range c.rules {
		lim := c.rules[i].lim
		if i == 0 && c.resolve != nil {
			if rl := c.resolve(r); rl != nil {
				lim = rl
			}
		}
		var start time.Time
		if c.observe != nil {
			start = c.clock.Now()
		}
		d, err := lim.Allow(ctx, keys[i], cost)
		outcome := outcomeOf(d, err, c.shadow)
		if c.observe != nil {
			c.observe(Event{
				Request: r, Key: keys[i], Policy: lim.Policy(), Outcome: outcome,
				Decision: d, Err: err, FailOpen: err != nil && c.failOpen,
				Duration: c.clock.Now().Sub(start),
			})
		}
		switch outcome {
		case Error:
			if c.failOpen {
				continue
			}
			c.onError(w, r, err)
			return
		case Denied:
			// A copy, so that only a refusal moves a Decision to the
			// heap: the handler is a func value the compiler cannot see
			// through.
			refused := d
			c.denied(w, r, &refused)
			return
		}
		if !decided || moreRestrictive(&d, &best) {
			best, decided = d, true
		}
		if outcome == ShadowDenied {
			// Enforcing would have refused here and asked no later
			// limiter, so shadow mode charges and reports nothing
			// more: its counts and outcomes are the ones enforcing
			// would make, not inflated by requests a refusal would
			// have stopped.
			break
		}
	}
	if decided {
		if !best.Allowed {
			// Shadow mode: the response is a success, so it says how
			// little is left but carries no Retry-After.
			best.Allowed, best.RetryAfter = true, 0
		}
		c.headers.Write(w.Header(), &best)
	}
	h.next.ServeHTTP(w, r)
}

func outcomeOf(d limiter.Decision, err error, shadow bool) Outcome {
	switch {
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

// internalError is the default ErrorHandler: the error's text may name
// hosts, keys or internals, so the client is told nothing of it.
func internalError(w http.ResponseWriter, _ *http.Request, _ error) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}

// badRequest is the default key error handler.
func badRequest(w http.ResponseWriter, _ *http.Request, _ error) {
	http.Error(w, "Bad Request: the client could not be identified for rate limiting", http.StatusBadRequest)
}
