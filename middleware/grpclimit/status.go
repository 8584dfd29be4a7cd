package grpclimit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// PushbackTrailer is the trailer by which a server tells a gRPC client
// with a retry policy how long to wait before its next attempt, in
// milliseconds (gRFC A6): a denied call carries the wait until the
// window turns, or -1, "do not retry", when that wait is longer than
// WithMaxPushback's bound.
const PushbackTrailer = "grpc-retry-pushback-ms"

// noRetry is the pushback that asks a client not to retry at all: gRFC
// A6 reads a negative or unparsable value so (grpc-go's
// csAttempt.shouldRetry returns the status at once). An absent pushback
// would not do: the client would retry after its policy's backoff, into
// another refusal.
const noRetry = "-1"

// The answers that carry nothing of the call: one value each, and never
// an error's text, which may name hosts, keys or internals.
var (
	errUnavailable = status.Error(codes.Unavailable, "rate limiter unavailable")
	errNoKeyStatus = status.Error(codes.InvalidArgument, "the client could not be identified for rate limiting")
	errInternal    = status.Error(codes.Internal, "internal error")
)

// keyOutcome names a key function's failure and the call's answer: a
// client without a key is the client's (INVALID_ARGUMENT); a key function
// installed where it cannot work, or failing otherwise, is the server's
// (INTERNAL), reported as Misconfigured or KeyFailed, as the HTTP
// middleware reports them.
func keyOutcome(err error) (middleware.Outcome, error) {
	switch {
	case errors.Is(err, keyfunc.ErrMisconfigured):
		return middleware.Misconfigured, errInternal
	case errors.Is(err, keyfunc.ErrNoKey):
		return middleware.KeyError, errNoKeyStatus
	}
	return middleware.KeyFailed, errInternal
}

// deny answers a call that d refused: RESOURCE_EXHAUSTED with RetryInfo
// and QuotaFailure details, and in the trailer the rate-limit metadata of
// the refusal, naming every policy that applied (the state's of the
// interceptors around, if any, and applied), and the pushback. Nothing
// goes in the header: a response that sends a header commits the call,
// and a grpc-go client with a retry policy would not retry it (gRFC A6);
// a trailers-only response is retried after the pushback, or not at all
// when the wait is longer than ic.maxPushback. RetryInfo and retry-after
// say the wait either way. ss is the call's stream, nil for a unary
// call.
func (ic *Interceptor) deny(ctx context.Context, ss grpc.ServerStream, outer *state, l *verdict.Life) error {
	md := make(metadata.MD, 6)
	d := new(limiter.Decision) // only a refusal moves a Decision to the heap
	*d = l.Best
	if ic.limits.Every {
		// Every limit that applied: the interceptors' around, as they
		// stand, and this one's rates before the refusal, read as
		// charged nothing once refunded.
		var (
			room [verdict.MaxPolicies]limiter.Decision
			kept [verdict.MaxPolicies]*limiter.Decision
			ptrs [verdict.MaxPolicies + verdict.MaxRules + 1]*limiter.Decision
			n    int
		)
		if outer != nil {
			_, kept, n = outer.v.Describe(&room)
			copy(ptrs[:], kept[:n])
		}
		all := ptrs[:n]
		for i := range l.Charged.N {
			all = append(all, &l.Charged.D[i])
		}
		ic.md.Write(http.Header(md), d, append(all, d)...)
	} else {
		ic.md.Write(http.Header(md), d)
	}
	if outer != nil {
		// The refusal answers the call: the interceptors around set no
		// header metadata of their own.
		outer.flushed.Store(true)
	}
	secs := refusal.Seconds(d.RetryAfter)
	wait := time.Duration(secs) * time.Second
	if ms, ok := refusal.SubSecond(d); ok {
		wait = time.Duration(ms) * time.Millisecond // gRPC can say less than a second
	}
	if d.CostExceedsLimit {
		secs, wait = 0, 0 // no wait admits the cost: never retry
		md[PushbackTrailer] = []string{noRetry}
	} else {
		md[PushbackTrailer] = []string{pushback(wait, ic.maxPushback)}
	}
	if ss != nil {
		ss.SetTrailer(md)
	} else {
		_ = grpc.SetTrailer(ctx, md)
	}
	return denial(d, secs, wait)
}

// pushback returns the pushback of a wait: in milliseconds, or noRetry
// when it is longer than bound.
func pushback(wait, bound time.Duration) string {
	if wait > bound {
		return noRetry
	}
	return strconv.FormatInt(wait.Milliseconds(), 10)
}

// denial returns the RESOURCE_EXHAUSTED status of a refusal that lifts in
// secs seconds, wait exactly (less than a second for a window under
// one): RetryInfo with wait, and a QuotaFailure that names
// the policy and its limit, never the key, in the words of the HTTP
// problem body's detail ("rate limit of 1000 per month exceeded; retry
// in 30 seconds"), as the status message is.
// A cost no wait admits (d.CostExceedsLimit) has no RetryInfo: a client
// must not retry it.
func denial(d *limiter.Decision, secs int64, wait time.Duration) error {
	text := refusal.Text(d, secs) // the HTTP problem body's detail
	st := status.New(codes.ResourceExhausted, text)
	name := "default"
	if d.Policy != nil {
		name = d.Policy.Name()
	}
	quota := &errdetails.QuotaFailure{Violations: []*errdetails.QuotaFailure_Violation{{
		Subject:     "policy:" + name,
		Description: text,
	}}}
	var detailed *status.Status
	var err error
	if d.CostExceedsLimit {
		detailed, err = st.WithDetails(quota)
	} else {
		detailed, err = st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)}, quota)
	}
	if err != nil {
		// Marshalling two fixed messages does not fail; if it ever
		// did, the code and the message still say what happened.
		return st.Err()
	}
	return detailed.Err()
}
