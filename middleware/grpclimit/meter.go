package grpclimit

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// meter makes rule i, added by WithReported or WithBytes, metered by m
// (verdict.Metered says what that asks of it).
func (ic *Interceptor) meter(i int, m verdict.Meter) error {
	if err := ic.limits.Meter(&ic.rules[i].rule, m); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return nil
}

// serveMetered serves a unary call with limits to settle: the handler
// reports to the tally in its context (middleware.Report), and every
// metered limit is settled once it has returned, by any path (an error,
// a panic), at what it reported, or at the size of the response it
// returned; the caps' slots are then given back. st is the call's state,
// if this interceptor made it.
func (ic *Interceptor) serveMetered(ctx context.Context, req any, handler grpc.UnaryHandler, st *state, l *verdict.Life, t *verdict.Tally) (resp any, err error) {
	t.Init(ctx, &ic.limits.Reported)
	t.Arm(l)
	var sent int64
	defer func() {
		l.Settle(t, sent)
		l.Release()
	}()
	resp, err = handler(t, req)
	if st != nil {
		st.flush()
	}
	if err == nil && ic.limits.Bytes {
		sent = messageSize(resp)
	}
	return resp, err
}

// streamMetered serves a stream with limits to settle, as serveMetered
// serves a unary call: the handler's stream (ms) carries the tally in its
// context and counts the messages it sends; the stream is settled once
// the handler has returned: the stream has ended.
func (ic *Interceptor) streamMetered(srv any, ms *meteredStream, handler grpc.StreamHandler, st *state, l *verdict.Life) error {
	if st != nil {
		ms.ServerStream = st.wrapped
	}
	ms.tally.Init(ms.ServerStream.Context(), &ic.limits.Reported)
	ms.tally.Arm(l)
	defer func() {
		l.Settle(&ms.tally, ms.sent)
		l.Release()
	}()
	err := handler(srv, ms)
	if st != nil {
		st.flush()
	}
	return err
}

// A meteredStream is the stream a handler with limits to settle gets: its
// context is the tally its handler reports to, and it counts the bytes of
// the messages sent (WithBytes).
type meteredStream struct {
	grpc.ServerStream
	tally verdict.Tally
	bytes bool  // count what is sent
	sent  int64 // the bytes of the messages sent, by the handler's goroutine
}

// Context returns the tally, so that the handler and the interceptors
// inside find it.
func (s *meteredStream) Context() context.Context { return &s.tally }

// SendMsg sends m and counts its size once it is sent.
func (s *meteredStream) SendMsg(m any) error {
	err := s.ServerStream.SendMsg(m)
	if err == nil && s.bytes {
		s.sent += messageSize(m)
	}
	return err
}

// messageSize returns the wire size of m, a protobuf message; 0 for a
// message of another codec.
func messageSize(m any) int64 {
	if pm, ok := m.(proto.Message); ok {
		return int64(proto.Size(pm))
	}
	return 0
}
