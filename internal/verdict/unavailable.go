package verdict

import (
	"context"

	"github.com/fixedwindow/ratelimit/limiter"
)

// An Unavailable is what a door's resolver returns when it could not
// look a request's limiter up (its plans' database is down): a limiter
// that cannot decide, so that the door's failure policy applies as to a
// store that failed (the error handler, or through uncharged with
// WithFailOpen), under the policy of the limiter it stands in for
// (For).
type Unavailable struct {
	Err    error
	policy *limiter.Policy
}

// For returns u standing in for a limiter of policy p: the one the
// resolver would have replaced, which the observer's event names.
func (u *Unavailable) For(p *limiter.Policy) *Unavailable {
	return &Unavailable{Err: u.Err, policy: p}
}

// Allow returns u's error: nothing is charged.
func (u *Unavailable) Allow(context.Context, string, int64) (limiter.Decision, error) {
	return limiter.Decision{}, u.Err
}

// Policy returns the policy of the limiter u stands in for (For).
func (u *Unavailable) Policy() *limiter.Policy { return u.policy }
