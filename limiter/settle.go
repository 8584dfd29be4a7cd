package limiter

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
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
// a caller settles an admission once (Reservation and the middlewares do).
type Settler interface {
	Settle(ctx context.Context, req Request, charged Decision, actual int64) error
}

// ErrSettled reports a Reservation settled already: the second Settle
// changes nothing.
var ErrSettled = errors.New("limiter: reservation already settled")

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

// CheckSettle reports, for a Settler of another package, a settle no
// store should apply: a bad request (ErrInvalidPolicy, ErrInvalidCost,
// ErrInvalidKey), an actual cost below zero or above MaxLimit
// (ErrInvalidCost). Nothing is to be charged then.
func CheckSettle(req Request, actual int64) error { return checkSettle(&req, actual) }

// Settle settles d, an admission this limiter made for key at cost
// reserved, at its actual cost, known once the request has been served
// (see Settler for what is charged and returned, and where). It reads the
// clock once. Errors report an actual cost below zero or above MaxLimit
// (ErrInvalidCost: nothing is charged), a closed limiter, a store that is
// no Settler (ErrInvalidOption), and a store that could not settle: a
// remote store may have applied the settle all the same, once.
//
// Settle is the primitive the middlewares call once per request; a
// caller of its own settles each admission once, or uses Reserve, whose
// Reservation refuses a second settle.
func (l *Limiter) Settle(ctx context.Context, key string, reserved, actual int64, d Decision) error {
	if err := l.check(ctx, key, reserved); err != nil {
		return err
	}
	if err := l.CanSettle(); err != nil {
		return err
	}
	st := l.store.(Settler)
	req := Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: reserved}
	if err := checkSettle(&req, actual); err != nil {
		return err
	}
	return st.Settle(ctx, req, d, actual)
}

// CanSettle reports why the limiter cannot settle a cost (a store that
// is no Settler, wrapping ErrInvalidOption), or nil: for a door that
// settles to refuse, when it is built, a limiter it could never settle.
func (l *Limiter) CanSettle() error {
	if _, ok := l.store.(Settler); !ok {
		return fmt.Errorf("%w: the store (%T) cannot settle a cost: it is no Settler", ErrInvalidOption, l.store)
	}
	return nil
}

// A Reservation is an admission of a request whose cost is known only
// once it has been served: Reserve admits it at an estimate, charged at
// once (so that concurrent requests cannot pass the limit), and Settle
// charges or returns the difference to its actual cost, once. Make one
// with Reserve; the zero Reservation is not usable.
type Reservation struct {
	// Decision is the admission, or the refusal, at the reserved cost.
	Decision
	l        *Limiter
	key      string
	reserved int64
	settled  atomic.Bool
}

// Reserve admits key at reserved (an estimate of the cost: 1 when
// nothing better is known), as Allow does, and returns the Reservation to
// settle with the actual cost once the request has been served. A
// refusal is a Reservation whose Decision has Allowed false (settling it
// changes nothing), and errors are Allow's.
func (l *Limiter) Reserve(ctx context.Context, key string, reserved int64) (*Reservation, error) {
	d, err := l.Allow(ctx, key, reserved)
	if err != nil {
		return nil, err
	}
	return &Reservation{Decision: d, l: l, key: key, reserved: reserved}, nil
}

// Settle charges or returns the difference between the reservation and
// actual (see Settler), once: a second call returns ErrSettled and
// changes nothing. An error that settles nothing leaves the reservation
// to settle: an actual cost below zero or above MaxLimit
// (ErrInvalidCost), a context already done, a closed limiter, a store
// that cannot settle. A refusal settles nothing. An error of the store
// does not say whether it was applied (see Settler); the reservation
// counts as settled. Settle after the client has gone under a context of
// its own (context.WithoutCancel of the request's), not the request's.
func (r *Reservation) Settle(ctx context.Context, actual int64) error {
	if actual < 0 || actual > MaxLimit {
		return fmt.Errorf("%w: actual cost %d must be in [0, %d]", ErrInvalidCost, actual, MaxLimit)
	}
	if r.Allowed {
		if err := r.l.check(ctx, r.key, r.reserved); err != nil {
			return err
		}
		if err := r.l.CanSettle(); err != nil {
			return err
		}
	}
	if !r.settled.CompareAndSwap(false, true) {
		return ErrSettled
	}
	if !r.Allowed {
		return nil
	}
	return r.l.Settle(ctx, r.key, r.reserved, actual, r.Decision)
}

// Reserved returns the cost the reservation was admitted at.
func (r *Reservation) Reserved() int64 { return r.reserved }
