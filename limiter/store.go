package limiter

import (
	"context"
	"time"
)

// A Request asks a Store for one decision.
type Request struct {
	// Key identifies the client; never empty.
	Key string
	// Policy is the validated policy to apply.
	Policy *Policy
	// Now is the instant of the request, read once by the limiter. A store
	// that keeps its own clock (such as Redis's TIME) may use that instead.
	Now time.Time
	// Cost is the weight of the request, > 0.
	Cost int64
	// Peek asks what Take would answer without charging anything.
	Peek bool
}

// A Store keeps fixed-window counters and applies the rule of [Decide] to
// them.
//
// Take must be one atomic read-modify-write: load the key's state for every
// window of the policy, decide, and store the charged state, with no other
// call on the same key and policy able to interleave. Separate "get" and
// "set" steps, each safe on its own, would not do: two callers could both
// read 9 of 10 and both be admitted. A refused or peeking Take writes
// nothing and extends no expiry.
//
// Stores namespace their state by Policy.ID, so policies with different
// names or rates never share counters.
//
// An error from Take does not promise that nothing was charged. A store
// across a network may apply the decision and then return an error, when
// ctx is cancelled or its deadline passes while the reply is on its way,
// or when the reply is lost: callers must treat a decision that timed out
// or was cancelled as possibly charged. Errors for an invalid request
// (ErrInvalidCost, ErrInvalidKey, ErrInvalidPolicy) charge nothing.
type Store interface {
	Take(ctx context.Context, req Request) (Decision, error)
	// Reset forgets key's counters under p. now is the instant of the
	// reset, read once from the limiter's clock, as Request.Now is: a
	// store that names windows by the time finds the current ones with
	// it, and keeps no clock of its own.
	Reset(ctx context.Context, key string, p *Policy, now time.Time) error
	// Refund returns req.Cost to the windows that charged, an admission
	// this store decided for req.Key under req.Policy. Each window is
	// refunded only while it is still current at req.Now (or at the
	// store's own clock, as Take's instant is): a refund never lends
	// budget to a later window. No count goes below zero. A refusal, a
	// decision charged to nothing (Uncharged) and a window already
	// ended refund nothing, with no error. Refund is atomic per key, as
	// Take is, and applied at most once: a store across a network sends it
	// once, and an error (like Take's) does not say whether it was
	// applied. Errors for an invalid request charge nothing back.
	Refund(ctx context.Context, req Request, charged Decision) error
}

// check reports a request no store should decide: a nil or zero policy, a
// cost of zero or less, an empty key. Limiter never sends one; a store
// called directly must not charge it.
func (r *Request) check() error {
	if err := r.Policy.check(); err != nil {
		return err
	}
	if r.Cost <= 0 {
		return ErrInvalidCost
	}
	if r.Key == "" {
		return ErrInvalidKey
	}
	return nil
}
