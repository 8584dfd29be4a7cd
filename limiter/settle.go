package limiter

import (
	"context"
	"fmt"
)

// A Settler is a Store that can settle an admission: charge or return the
// difference between the cost it was admitted at and its actual cost,
// known only once the request has been served (the tokens of a model's
// answer, the bytes of a download). MemoryStore and the Redis store are
// Settlers; Limiter.Settle refuses a store that is not.
//
// Settle applies actual − req.Cost, req.Cost being the cost d charged
// (the reservation), at req.Now (or at the store's own clock, as Take's
// instant is), atomically per key, as Take is:
//
//   - more than reserved: the difference is charged to the windows current
//     at req.Now, whatever their count: the work is done, so a settle is
//     never refused, and may take a key past its limit (into debt, which
//     refuses it until the window holding the debt ends). A request
//     admitted in a window that has since ended pays its difference in the
//     window it ended in.
//   - less: the difference goes back to the windows d charged that are
//     still current, never below zero, never to a later window, as
//     Refund returns a charge.
//   - a refusal, a decision charged to nothing (Uncharged) and an actual
//     equal to the reservation settle nothing, with no error.
//
// A store across a network applies each Settle at most once: a call sent
// again after a lost reply is recognised (the Redis store keeps a marker
// of each settle for a while) and counted once. Each call is one settle:
// a caller settles an admission once (the middlewares do).
//
// A Settler of another package checks its arguments as Limiter.Settle
// does before it charges anything: a request of no policy, a cost of
// zero or less, an empty key, an actual cost below zero or above
// MaxLimit (ErrInvalidPolicy, ErrInvalidCost, ErrInvalidKey).
type Settler interface {
	Settle(ctx context.Context, req Request, charged Decision, actual int64) error
}

// checkSettle reports a settle no store should apply: a bad request, an
// actual cost below zero or above MaxLimit.
func checkSettle(req *Request, actual int64) error {
	if err := req.check(); err != nil {
		return err
	}
	if actual < 0 || actual > MaxLimit {
		return fmt.Errorf("%w: actual cost %d must be in [0, %d]", ErrInvalidCost, actual, MaxLimit)
	}
	return nil
}

// Settle settles d, an admission this limiter made for key at cost
// reserved, at its actual cost, known once the request has been served
// (see Settler for what is charged and returned, and where): a model's
// tokens, reserved at the request's max_tokens and settled at what the
// answer used. It reads the clock once. Settle each admission once: a
// second call is a second settle (the middlewares settle each once).
//
// A limiter whose store cannot settle (no Settler) answers every call
// with an error wrapping ErrInvalidOption, before it looks at its
// arguments: a door that settles calls it with no key when it is built,
// to refuse such a limiter then. Other errors report an actual cost
// below zero or above MaxLimit (ErrInvalidCost: nothing is charged), a
// reserved cost of zero or less, an empty key, a closed limiter, a
// context already done, and a store that could not settle: a remote
// store may have applied the settle all the same, once. Settle after the
// client has gone under a context of its own (context.WithoutCancel of
// the request's), not the request's.
func (l *Limiter) Settle(ctx context.Context, key string, reserved, actual int64, d Decision) error {
	st, ok := l.store.(Settler)
	if !ok {
		return fmt.Errorf("%w: the store (%T) cannot settle a cost: it is no Settler", ErrInvalidOption, l.store)
	}
	if err := l.check(ctx, key, reserved); err != nil {
		return err
	}
	req := Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: reserved}
	if err := checkSettle(&req, actual); err != nil {
		return err
	}
	return st.Settle(ctx, req, d, actual)
}
