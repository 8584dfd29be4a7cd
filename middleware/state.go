package middleware

import (
	"context"
	"net/http"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A state is what the middlewares limiting one request share: the decision
// the headers describe and the policies that applied. The outermost
// middleware that decides makes it, as the request's context, in one
// allocation with the request the handler gets (a reqState) and
// everything else the request needs (the status recorder of WithCountIf,
// the slots of WithInFlight); an inner middleware finds it there and adds
// to it, so that stacked middlewares send one set of headers and
// DecisionFrom sees the most restrictive decision of them all.
//
// Only the middlewares write it, each before calling the handler it
// wraps; the handler and what it calls only read it.
type state struct {
	context.Context // the request's context before the first middleware

	// v is the most restrictive decision (a refusal only in shadow
	// mode) and the policies that applied, outermost first, each once.
	v verdict.Joined

	hdr headers.Buffer // the first header write's values

	caps *heldCaps // the in-flight slots of the innermost middleware that holds some, linked to the outer ones'
}

// A reqState is a state and the request the handler gets, whose context
// it is: r.WithContext's copy, moved into the state's allocation. The
// layouts are planned for Go's size classes on 64-bit platforms: a
// reqState is 512 bytes (an http.Request of 304, a state of 208), the
// largest object the allocator keeps without a header; above that an
// object with pointers takes 8 bytes more, and a counted one (544) takes
// a class of 576, a capped one (632) of 640, a capped and counted one
// (664) of 704, a metered one (752: its tally holds a Reported rule's
// decision) of 768, a metered and capped one (872) of 896
// (TestStateSizeClasses).
type reqState struct {
	state
	req http.Request
}

// A countedState is a reqState with room for WithCountIf's status
// recorder, made by a middleware that counts by status, so that such a
// request too allocates one struct.
type countedState struct {
	reqState
	rec statusRecorder
}

// A cappedState is a reqState with room for the slots of the
// middleware's in-flight caps (WithInFlight): one struct still.
type cappedState struct {
	reqState
	held heldCaps
}

// A cappedCountedState has room for both.
type cappedCountedState struct {
	reqState
	rec  statusRecorder
	held heldCaps
}

// A meteredState is a reqState with what a request with limits to
// settle needs (WithReported, WithBytes): the tally its handler reports
// to, which is the context of the request the handler gets, and a
// status recorder that counts the bytes of the response (and its status,
// for WithCountIf). A meteredCappedState has room for the caps' slots
// too.
type meteredState struct {
	reqState
	meter
}

type meteredCappedState struct {
	meteredState
	held heldCaps
}

// stateKey is the context key of a *state. The state answers it itself,
// so the request's context grows by one node, not two.
type stateKey struct{}

// Value returns the state for stateKey, and asks the parent otherwise.
func (s *state) Value(key any) any {
	if _, ok := key.(stateKey); ok {
		return s
	}
	return s.Context.Value(key)
}

// stateFrom returns the state of the middlewares that decided ctx's
// request, or nil.
func stateFrom(ctx context.Context) *state {
	s, _ := ctx.Value(stateKey{}).(*state)
	return s
}

// newState returns the state of request r, first decided by d, and in
// the same allocation the request the handler gets, a copy of r whose
// context is the state, a status recorder for WithCountIf when counted,
// and room for the caps' slots when capped. A metered one (a middleware
// of limits to settle) has a tally too, counting units, which is the
// context of the request the handler gets, and a recorder.
func newState(r *http.Request, d *limiter.Decision, counted, capped, metered bool, units *verdict.Units) (*state, *http.Request, *statusRecorder, *heldCaps, *meter) {
	var (
		rs   *reqState
		rec  *statusRecorder
		held *heldCaps
		m    *meter
	)
	switch {
	case metered && capped:
		ms := new(meteredCappedState)
		rs, rec, held, m = &ms.reqState, &ms.rec, &ms.held, &ms.meter
	case metered:
		ms := new(meteredState)
		rs, rec, m = &ms.reqState, &ms.rec, &ms.meter
	case capped && counted:
		cs := new(cappedCountedState)
		rs, rec, held = &cs.reqState, &cs.rec, &cs.held
	case capped:
		cs := new(cappedState)
		rs, held = &cs.reqState, &cs.held
	case counted:
		cs := new(countedState)
		rs, rec = &cs.reqState, &cs.rec
	default:
		rs = new(reqState)
	}
	s := &rs.state
	s.Context = r.Context()
	s.v.Set(d)
	if m != nil {
		m.tally.Init(s, units)
		rs.req = *r.WithContext(&m.tally)
		return s, &rs.req, rec, held, m
	}
	// WithContext is inlined, and its copy, only read here, stays on
	// the stack: the one the handler gets lives in rs.
	rs.req = *r.WithContext(s)
	return s, &rs.req, rec, held, nil
}

// DecisionFrom returns the decision that the rate-limit headers of ctx's
// request describe, for the handler: a JSON body showing the quota, a log
// line. With several limiters (WithLimiter) or stacked middlewares it is
// the most restrictive of their decisions, as the headers are. It reports
// false outside the middleware, and for a request no limiter decided
// (exempt, or let through by WithFailOpen).
//
// The decision was made before the handler ran: Remaining counts this
// request as charged, even where WithCountIf refunds it once the handler
// has answered; a limit of WithReported alone beside the others reads at
// what the handler has reported so far (its reservation until then), as
// the headers written at the first byte do. In shadow mode a refusal that was let through reads as
// the headers say, an admission with nothing remaining. A custom Limiter's
// decision without a Policy carries the limiter's.
//
// DecisionFrom allocates nothing; the handler may call it as often as it
// likes, and from goroutines it starts, while it runs.
func DecisionFrom(ctx context.Context) (limiter.Decision, bool) {
	s := stateFrom(ctx)
	if s == nil {
		return limiter.Decision{}, false
	}
	return s.v.DescribedWith(ctx), true
}
