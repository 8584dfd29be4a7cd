package limiter

import (
	"context"
	"fmt"
)

// RefundUsage returns cost to the windows u describes, a usage of key
// that l's Usage read (or that of a limiter of the same policy name and
// windows, such as one For returned), while each is still
// current, never below zero: a refund a person decides on, such as
// support giving a customer back what a faulty request cost them, where
// Refund returns what one admission charged. It reads the clock once, as
// Refund does, and a window that has ended since u was read gets nothing:
// a refund never lends budget to a later window.
//
// A window that holds less than cost goes to zero; a caller that must not
// refund past what the key used compares cost with u's windows first.
// On a store shared by replicas (redisstore) the counts change at once
// and every replica obeys within one second, as after Reset. Errors are
// Refund's, and one wrapping ErrInvalidPolicy for a usage of another
// policy or of none.
func (l *Limiter) RefundUsage(ctx context.Context, key string, cost int64, u Usage) error {
	if err := l.check(ctx, key, cost); err != nil {
		return err
	}
	if u.Policy == nil {
		return fmt.Errorf("%w: refund of a usage of no policy (the zero Usage)", ErrInvalidPolicy)
	}
	if !l.policy.sameUsage(u.Policy) {
		return fmt.Errorf("%w: refund of a usage of policy %q, not %q", ErrInvalidPolicy, u.Policy.Name(), l.policy.name)
	}
	// The windows u shows, as an admission decided at u.At would name
	// them: the stores' Refund finds a key's windows by the decision's
	// instant and keeps those still current at the request's.
	d := Decision{Allowed: true, windows: true, Policy: l.policy, nowMs: u.At.UnixMilli()}
	return l.store.Refund(ctx, Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: cost}, d)
}
