// Package rank orders decisions by what they tell a client: the most
// restrictive of a response's decisions is the one its headers describe
// (internal/verdict), and the one each unit's set describes (headers).
package rank

import "github.com/fixedwindow/ratelimit/limiter"

// More reports whether a tells the client less than b does about what it
// may still spend, by the rule the limiter applies to the windows of one
// policy: a refusal beats an admission; between refusals the one that
// resets last (the longer wait); between admissions the one with less
// remaining, then the one that resets last.
func More(a, b *limiter.Decision) bool {
	if a.Allowed != b.Allowed {
		return !a.Allowed
	}
	if !a.Allowed {
		if !a.ResetAt.Equal(b.ResetAt) {
			return a.ResetAt.After(b.ResetAt)
		}
		return a.Remaining < b.Remaining
	}
	if a.Remaining != b.Remaining {
		return a.Remaining < b.Remaining
	}
	return a.ResetAt.After(b.ResetAt)
}
