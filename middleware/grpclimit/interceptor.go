package grpclimit

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// maxLimiters is the most limiters one interceptor applies: the one given
// to New and those added with WithLimiter.
const maxLimiters = 4

// A rule is one limiter and the key it is applied to.
type rule struct {
	lim     middleware.Limiter
	key     KeyFunc
	clocked verdict.Clocked // lim, if it decides by a clock of its own; nil otherwise
}

// An Interceptor limits the calls of a gRPC server with a limiter, as
// package middleware limits HTTP requests: Unary for unary methods,
// Stream for streaming ones (a stream is decided once, when it opens).
// Build it with New; its settings are fixed there and it is safe for
// concurrent use. The zero Interceptor is not usable.
type Interceptor struct {
	rules     []rule
	methods   map[string]rule // per full method, in place of rules[0]
	exempt    func(ctx context.Context, fullMethod string) bool
	cost      func(ctx context.Context, fullMethod string) int64
	failOpen  bool
	shadow    bool
	observe   middleware.Observer
	md        *headers.Writer // the metadata writer: lower-case names
	mdOnAllow bool            // md writes something on an admission

	maxPushback time.Duration // the longest wait a refusal pushes back; longer ones ask for no retry
}

// New returns an Interceptor that limits calls with l, keyed by the
// peer's address (PeerHost) unless WithKey says otherwise. Configuration
// errors (a nil limiter or option argument, too many limiters, a method
// name that is none, a metadata name gRPC cannot send, a pushback bound
// out of range) are reported here, wrapping ErrInvalidOption, never by a
// call.
func New(l middleware.Limiter, opts ...Option) (*Interceptor, error) {
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
		c.key = PeerHost()
	}
	ic := &Interceptor{
		rules:    append([]rule{{lim: l, key: c.key}}, c.extra...),
		exempt:   c.exempt,
		cost:     c.cost,
		failOpen: c.failOpen,
		shadow:   c.shadow,
		observe:  c.observe,

		maxPushback: c.maxPushback(),
	}
	if len(ic.rules) > maxLimiters {
		return nil, fmt.Errorf("%w: %d limiters, at most %d", ErrInvalidOption, len(ic.rules), maxLimiters)
	}
	for i := range ic.rules {
		ic.rules[i].clocked, _ = ic.rules[i].lim.(verdict.Clocked)
	}
	if len(c.methods) > 0 {
		ic.methods = make(map[string]rule, len(c.methods))
		for m, l := range c.methods {
			r := rule{lim: l, key: c.key}
			r.clocked, _ = r.lim.(verdict.Clocked)
			ic.methods[m] = r
		}
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
	return ic, nil
}

// Unary returns the interceptor for unary methods, for
// grpc.UnaryInterceptor or grpc.ChainUnaryInterceptor.
func (ic *Interceptor) Unary() grpc.UnaryServerInterceptor { return ic.unary }

// Stream returns the interceptor for streaming methods, for
// grpc.StreamInterceptor or grpc.ChainStreamInterceptor. A stream is
// decided once, when it opens, at the cost WithCost gives it: its
// messages are not counted.
func (ic *Interceptor) Stream() grpc.StreamServerInterceptor { return ic.stream }

func (ic *Interceptor) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if ic.exempt != nil && ic.exempt(ctx, info.FullMethod) {
		return handler(ctx, req)
	}
	st, err := ic.decide(ctx, info.FullMethod, nil)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return handler(ctx, req)
	}
	resp, err := handler(st, req)
	st.flush()
	return resp, err
}

func (ic *Interceptor) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ctx := ss.Context()
	if ic.exempt != nil && ic.exempt(ctx, info.FullMethod) {
		return handler(srv, ss)
	}
	st, err := ic.decide(ctx, info.FullMethod, ss)
	if err != nil {
		return err
	}
	if st == nil {
		return handler(srv, ss)
	}
	err = handler(srv, st.wrapped)
	st.flush()
	return err
}

// decide resolves every key first, so that a call whose identity is
// incomplete charges nothing, then asks limiter by limiter up to the first
// refusal, enforced or shadow, as the HTTP middleware does. It returns
// the error to answer the call with, or the state this interceptor made
// for the call, which it hands the handler and flushes; nil when there is
// nothing to flush: nothing was decided (fail-open), or an interceptor
// around this one made the state and this one's decisions joined it. ss
// is the call's stream, nil for a unary call.
func (ic *Interceptor) decide(ctx context.Context, method string, ss grpc.ServerStream) (*state, error) {
	var (
		keys [maxLimiters]string
		req  *http.Request // the observer's stand-in, made on first use
	)
	first := ic.rules[0]
	if r, ok := ic.methods[method]; ok {
		first = r
	}
	rule := func(i int) *rule {
		if i == 0 {
			return &first
		}
		return &ic.rules[i]
	}
	for i := range ic.rules {
		k, err := rule(i).key(ctx, method)
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			return nil, ic.keyFailed(ctx, method, &req, rule(i).lim, err)
		}
		keys[i] = k
	}
	cost := int64(1)
	if ic.cost != nil {
		cost = ic.cost(ctx, method)
	}
	outer := stateFrom(ctx)
	var (
		best     limiter.Decision
		decided  bool
		applied  [maxLimiters]*limiter.Policy // the policies that decided, in order
		nApplied int
	)
	for i := range ic.rules {
		r := rule(i)
		d, at, took, err := verdict.Ask(ctx, r.lim, r.clocked, keys[i], cost, ic.observe != nil)
		outcome := outcomeOf(ctx, d, err, ic.shadow)
		if err == nil && d.NumWindows() == 0 && d.DecidedAt().IsZero() {
			// A custom Limiter's decision, built field by field: dated
			// here, by the limiter's clock when it has one.
			if at.IsZero() {
				at = time.Now()
			}
			d = limiter.Dated(d, at)
		}
		if err == nil && d.Policy == nil {
			d.Policy = r.lim.Policy()
		}
		if ic.observe != nil {
			ic.observe(middleware.Event{
				Request: stand(&req, ctx, method), Key: keys[i], Policy: r.lim.Policy(), Outcome: outcome,
				Decision: d, Err: err, FailOpen: outcome == middleware.Error && ic.failOpen, Duration: took,
			})
		}
		switch outcome {
		case middleware.Canceled:
			return nil, status.FromContextError(ctx.Err()).Err()
		case middleware.Error:
			if ic.failOpen {
				continue
			}
			return nil, errUnavailable
		case middleware.Denied:
			applied[nApplied] = d.Policy
			nApplied++
			return nil, ic.deny(ctx, ss, outer, &d, applied[:nApplied])
		}
		applied[nApplied] = d.Policy
		nApplied++
		if !decided || verdict.More(&d, &best) {
			best, decided = d, true
		}
		if outcome == middleware.ShadowDenied {
			// Enforcing would have stopped here: no later limiter is
			// asked or charged (see middleware.WithShadow).
			break
		}
	}
	switch {
	case !decided:
		return nil, nil
	case outer != nil:
		outer.v.Merge(&best)
		outer.v.Apply(applied[:nApplied])
		return nil, nil
	case !ic.mdOnAllow:
		// Nothing to send on an admission: no state to carry it.
		return nil, nil
	}
	st := newState(ctx, ic, ss)
	st.v.Set(&best)
	st.v.Apply(applied[:nApplied])
	return st, nil
}

// keyFailed reports a key function's failure and returns the call's
// answer: INVALID_ARGUMENT for a client that cannot be identified,
// INTERNAL for a key function that is misconfigured or failed otherwise.
func (ic *Interceptor) keyFailed(ctx context.Context, method string, req **http.Request, lim middleware.Limiter, err error) error {
	outcome, answer := keyOutcome(err)
	if ic.observe != nil {
		ic.observe(middleware.Event{Request: stand(req, ctx, method), Policy: lim.Policy(), Outcome: outcome, Err: err})
	}
	return answer
}

// outcomeOf names what a decision made of the call. An error with the
// call's context done is the client's leaving (or its deadline), not a
// store failure: Canceled.
func outcomeOf(ctx context.Context, d limiter.Decision, err error, shadow bool) middleware.Outcome {
	switch {
	case err != nil && ctx.Err() != nil:
		return middleware.Canceled
	case err != nil:
		return middleware.Error
	case d.Allowed:
		return middleware.Allowed
	case shadow:
		return middleware.ShadowDenied
	default:
		return middleware.Denied
	}
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
