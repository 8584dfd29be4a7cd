// Package grpclimit puts a fixed-window limiter in front of gRPC
// services, as package middleware does for HTTP handlers: the same
// limiter, stores, policies, failure policy and observers, so one client
// has one budget whichever door it comes through.
//
//	ic, err := grpclimit.New(l) // keyed by the peer's address
//	if err != nil {
//		log.Fatal(err)
//	}
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(ic.Unary()),
//		grpc.ChainStreamInterceptor(ic.Stream()),
//	)
//
// For each call the interceptor resolves the client's key (by default
// PeerHost, the key keyfunc.RemoteHost gives the same client over HTTP),
// asks the limiter, and then:
//
//   - allowed: the handler runs, and the response's header metadata
//     carry x-ratelimit-limit, x-ratelimit-remaining and
//     x-ratelimit-reset (and the draft's ratelimit and ratelimit-policy
//     with a headers.WithDraftHeaders Writer, WithHeaders);
//   - denied: RESOURCE_EXHAUSTED, with a google.rpc.RetryInfo detail whose
//     delay reaches the window's end, rounded up to whole seconds, a
//     google.rpc.QuotaFailure naming the policy (never the key) and its
//     limit in the HTTP body's words ("1000 per month"), and in the trailer the same metadata as an
//     admission, retry-after and grpc-retry-pushback-ms with the same
//     delay, so that a grpc-go client with a retry policy for
//     RESOURCE_EXHAUSTED waits until the window has turned (a denial
//     sends no header: one would commit the call, and the client would
//     not retry it). A delay longer than WithMaxPushback's bound (default
//     one minute: an hourly, daily or monthly limit) sends a pushback of
//     -1 instead, which asks the client not to retry: it gets the refusal
//     at once, not at its deadline or when the month turns, and RetryInfo
//     and retry-after still say the delay;
//   - the limiter could not decide: UNAVAILABLE, never the error's text,
//     or the handler under WithFailOpen;
//   - the caller's context is done: CANCELED (DEADLINE_EXCEEDED for a
//     deadline), with or without WithFailOpen;
//   - no key (keyfunc.ErrNoKey): INVALID_ARGUMENT, or the status
//     WithKeyErrorHandler chooses (UNAUTHENTICATED), never the failure
//     policy's; a key function that is
//     misconfigured or fails otherwise, or a resolver's typed nil:
//     INTERNAL (WithErrorHandler answers these, and UNAVAILABLE, as the
//     HTTP middleware's answers its 500s).
//
// A stream is decided once, when it opens. Several limits are given to
// one Interceptor with WithLimiter, or by chaining Interceptors; either
// way the call carries one set of metadata, describing the most
// restrictive decision. WithPlans picks every limit per call from the
// caller's plan and zone, on one usage, WithInFlight caps the
// calls at once per key (a stream holds its slot until it ends), and
// NewInFlight is a cap alone. WithMethods gives methods limiters of their own,
// WithExempt lets health checks through, WithShadow watches a limit
// before enforcing it, WithMaxPushback bounds the waits clients are asked
// to retry after, and WithObserver takes the observers of
// middleware/metrics and middleware/otelmetrics unchanged.
//
// This package is a module of its own, so that the root module's go.mod
// does not require gRPC.
package grpclimit
