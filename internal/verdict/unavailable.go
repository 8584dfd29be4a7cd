package verdict

import (
	"context"

	"github.com/fixedwindow/ratelimit/limiter"
)

// An Unavailable stands in for a door's limiter when the request's plan
// could not be looked up (the plans' database is down: Plans.Failing): a
// limiter that cannot decide, so that the door's failure policy applies
// as to a store that failed (the error handler, or through uncharged
// with fail-open), under the policy of the limiter it stands in for.
type Unavailable struct {
	Err    error
	policy *limiter.Policy
}

// Allow returns u's error: nothing is charged.
func (u *Unavailable) Allow(context.Context, string, int64) (limiter.Decision, error) {
	return limiter.Decision{}, u.Err
}

// Policy returns the policy of the limiter u stands in for.
func (u *Unavailable) Policy() *limiter.Policy { return u.policy }
