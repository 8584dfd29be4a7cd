package grpclimit

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A state is what the interceptors limiting one call share: the decision
// the rate-limit metadata describe and the policies that applied. The
// outermost interceptor that decides makes it, as the handler's context,
// in one allocation with the room for the metadata's values (and for a
// stream, the stream the handler gets); an inner interceptor, of a chain
// or of another Interceptor, finds it there and adds to it, so that
// stacked limits send one set of metadata describing the most
// restrictive decision.
//
// The metadata are set once, by flush, as late as they can be: when the
// handler sends its header (grpc.SendHeader, or a stream's SendHeader or
// first SendMsg) or returns, whichever comes first. So every
// interceptor inside has decided, and the handler's own header metadata
// go out with them. For a unary call the state stands in for the call's
// grpc.ServerTransportStream in the handler's context (see Value), so
// that grpc.SendHeader flushes first.
type state struct {
	context.Context // the call's context before the first interceptor

	v       verdict.Joined
	decided bool              // v holds a decision: some rate decided
	caps    *verdict.CapsList // the caps' slots of the interceptors that hold some, innermost first
	md      *headers.Writer
	onAllow bool // md writes something on an admission

	// stream is the call's transport stream, found in the context;
	// ss the call's stream for a streaming call, nil for a unary one,
	// and wrapped the stream the handler gets.
	stream  grpc.ServerTransportStream
	ss      grpc.ServerStream
	wrapped *serverStream

	flushed atomic.Bool
	hdr     headers.Buffer // the metadata's values
	every   bool           // the interceptors keep every decision (verdict.Limits.Every)
	t       *verdict.Tally // the innermost tally that holds a Reported rule's decision, if any
}

// A serverStream is the stream a streaming handler gets: its context is
// the state, and its first send flushes the state's metadata.
type serverStream struct {
	grpc.ServerStream
	st state
}

// newState returns the state of a call decided first by this interceptor.
// ss is the call's stream, nil for a unary call.
func newState(ctx context.Context, ic *Interceptor, ss grpc.ServerStream) *state {
	var st *state
	if ss != nil {
		w := &serverStream{ServerStream: ss}
		st = &w.st
		st.ss, st.wrapped = ss, w
	} else {
		st = &state{}
	}
	st.Context, st.md, st.onAllow = ctx, ic.md, ic.mdOnAllow
	st.stream = grpc.ServerTransportStreamFromContext(ctx)
	return st
}

// stateKey is the context key of a *state. The state answers it itself,
// so the handler's context grows by one node, not two.
type stateKey struct{}

// Value returns the state for stateKey, and asks the parent otherwise. It
// answers for the call's transport stream too, with a wrapper that
// flushes the metadata before the handler sends its header: grpc finds
// the stream by a key of its own, so the state recognises the stream by
// the value the parent holds.
func (s *state) Value(key any) any {
	if _, ok := key.(stateKey); ok {
		return s
	}
	v := s.Context.Value(key)
	if s.stream != nil && v == any(s.stream) {
		return (*transportStream)(s)
	}
	return v
}

// stateFrom returns the state of the interceptors that decided ctx's
// call, or nil.
func stateFrom(ctx context.Context) *state {
	s, _ := ctx.Value(stateKey{}).(*state)
	return s
}

// join adds what admitted a call through interceptor ic to the state:
// its decision, if more restrictive, the policies that applied, each
// rule's decision when ic's metadata describe every one (a Reported
// rule's with t, the tally its handler reports to, to be read when the
// metadata are set), and the caps' slots. Only interceptors write it,
// each before calling the handler it wraps.
func (s *state) join(l *verdict.Life, ic *Interceptor, t *verdict.Tally) {
	keep := ic.limits.Every
	s.every = s.every || keep
	best := &l.Best
	var others limiter.Decision
	if t != nil && ic.held >= 0 {
		if hold := l.HeldOut(ic.held, &others); hold >= 0 {
			t.Hold(&l.Charged.D[hold], l.Costs[ic.held], slices.Index(ic.limits.Reported.List, l.RuleOf(hold).Unit))
			s.t = t
			if l.Best.Policy == l.Charged.D[hold].Policy {
				best = &others // read when the metadata are set
			}
		}
	}
	if l.Decided {
		if s.decided {
			s.v.Merge(best, keep)
		} else {
			s.v.Set(best)
			s.decided = true
		}
		s.v.Apply(l.RatesApplied(), keep)
	}
	if keep {
		for i := range l.Charged.N {
			e := verdict.Entry{D: l.Charged.D[i]}
			if r := l.RuleOf(i); t != nil && r.Meter == verdict.Reported {
				e.Reserved, e.Unit, e.Tally = l.Costs[l.Charged.Rule[i]], r.Unit, t
			}
			s.v.Keep(e)
		}
	}
	if l.Held.Len() > 0 {
		s.caps = &verdict.CapsList{Prev: s.caps, Caps: l.Held}
	}
}

// flush sets the metadata of the decisions and of the caps' slots, once:
// the first call does it, later ones nothing. A Reported rule's decision
// reads at what the handler has reported by then.
func (s *state) flush() {
	if !s.onAllow || !s.flushed.CompareAndSwap(false, true) {
		return
	}
	md := make(metadata.MD, 4)
	switch {
	case s.decided && s.every:
		var room [verdict.MaxPolicies]limiter.Decision
		best, all, n := s.v.Describe(&room)
		verdict.WriteAll(s.md, http.Header(md), &best, all[:n], s.caps)
	case s.decided:
		var best limiter.Decision
		if s.t != nil {
			best = s.v.DescribedWith(s.t)
		} else {
			best = s.v.Described()
		}
		s.md.WriteBuffer(&s.hdr, http.Header(md), &best)
	case s.caps != nil:
		verdict.WriteAll(s.md, http.Header(md), nil, nil, s.caps)
	}
	if len(md) > 0 {
		_ = s.setHeader(md)
	}
}

// setHeader adds md to the call's header metadata, through the stream
// for a streaming call (grpc validates it there and logs it) and the
// transport stream for a unary one. A call with neither (an interceptor
// called outside a server, in a test) has nowhere to put it.
func (s *state) setHeader(md metadata.MD) error {
	switch {
	case s.ss != nil:
		return s.ss.SetHeader(md)
	case s.stream != nil:
		return s.stream.SetHeader(md)
	}
	return nil
}

// Context returns the state, so that the handler and the interceptors
// inside find it.
func (w *serverStream) Context() context.Context { return &w.st }

// SendHeader sets the rate-limit metadata, then sends the header.
func (w *serverStream) SendHeader(md metadata.MD) error {
	w.st.flush()
	return w.ServerStream.SendHeader(md)
}

// SendMsg sets the rate-limit metadata before the first message, which
// sends the header.
func (w *serverStream) SendMsg(m any) error {
	w.st.flush()
	return w.ServerStream.SendMsg(m)
}

// A transportStream is the state seen as the call's
// grpc.ServerTransportStream: everything goes to the call's, and
// SendHeader flushes the rate-limit metadata first.
type transportStream state

var _ grpc.ServerTransportStream = (*transportStream)(nil)

// Method returns the call's full method.
func (t *transportStream) Method() string { return t.stream.Method() }

// SetHeader adds md to the header metadata.
func (t *transportStream) SetHeader(md metadata.MD) error { return t.stream.SetHeader(md) }

// SendHeader flushes the rate-limit metadata, then sends the header with
// md.
func (t *transportStream) SendHeader(md metadata.MD) error {
	(*state)(t).flush()
	return t.stream.SendHeader(md)
}

// SetTrailer adds md to the trailer metadata.
func (t *transportStream) SetTrailer(md metadata.MD) error { return t.stream.SetTrailer(md) }
