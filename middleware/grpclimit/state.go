package grpclimit

import (
	"context"
	"net/http"
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

	// all are the decisions of limits of several units (WithReported,
	// WithBytes), for each unit's metadata; nil otherwise.
	all []limiter.Decision
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

// join adds what admitted a call through one interceptor to the state:
// its decision, if more restrictive, the policies that applied, and the
// caps' slots; every decision, with metered limits (settles), so that
// the metadata describe each unit. Only interceptors write it, each
// before calling the handler it wraps.
func (s *state) join(l *verdict.Life, settles bool) {
	if settles && l.Charged.N > 1 && s.md.WritesEveryDecision() {
		s.all = append(s.all, l.Charged.D[:l.Charged.N]...)
	}
	if l.Decided {
		if s.decided {
			s.v.Merge(&l.Best)
		} else {
			s.v.Set(&l.Best)
			s.decided = true
		}
		s.v.Apply(l.RatesApplied())
	}
	if l.Held.Len() > 0 {
		s.caps = &verdict.CapsList{Prev: s.caps, Caps: l.Held}
	}
}

// flush sets the metadata of the decision and of the caps' slots, once:
// the first call does it, later ones nothing.
func (s *state) flush() {
	if !s.onAllow || !s.flushed.CompareAndSwap(false, true) {
		return
	}
	md := make(metadata.MD, 4)
	if s.decided {
		if len(s.all) > 0 {
			s.writeAll(http.Header(md))
		} else {
			d := s.v.Described()
			s.md.WriteBuffer(&s.hdr, http.Header(md), &d, s.v.Applied()...)
		}
	}
	if s.caps != nil {
		verdict.WriteCaps(s.md, http.Header(md), s.caps)
	}
	if len(md) > 0 {
		_ = s.setHeader(md)
	}
}

// writeAll sets the metadata of a call limits of several units
// admitted: the most restrictive decision first, then every one, for
// each unit's metadata (headers.WithUnitHeaders) and the draft
// ratelimit field.
func (s *state) writeAll(h http.Header) {
	ds := make([]*limiter.Decision, 1, 1+len(s.all))
	d := s.v.Described()
	ds[0] = &d
	for i := range s.all {
		ds = append(ds, &s.all[i])
	}
	s.md.WriteAll(h, ds, s.v.Applied()...)
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

// with returns the policies that applied to the call when ps are added to
// the state's: the list a refusal's metadata name. A nil state has none
// of its own.
func (s *state) with(ps []*limiter.Policy) []*limiter.Policy {
	if s == nil {
		return (*verdict.Joined)(nil).With(ps)
	}
	return s.v.With(ps)
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
