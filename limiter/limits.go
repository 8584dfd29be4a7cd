package limiter

import "sync"

// maxPlans bounds the limiters WithLimits keeps per limiter: a resolver
// that asks for a limit per customer must not grow it without end. Past
// it, WithLimits builds a fresh limiter each time, as correct and one
// allocation dearer.
const maxPlans = 256

// plans are the limiters WithLimits has returned, by their limits, so
// that a resolver asking for a plan's limits per request gets the same
// limiter (and the same policy, which stores key their per-policy
// caches by) every time.
type plans struct {
	mu sync.Mutex
	m  map[[MaxWindows]int64]*Limiter
}

// WithLimits returns a limiter that decides the same usage as l under
// other limits, one per rate of l's policy in its order: the policy
// Policy.WithLimits returns, on l's store, by l's clock. Its counters
// are l's, whatever the limits (see Policy): a key that spent 1,000 of a
// plan of 1,000 a month under l and is then decided under WithLimits(2000)
// has 1,000 left. It is the way to choose limits per key or per request
// (a customer's plan, looked up in a database), and to say in code that
// the plans share one usage: it shares l's claim on the store, where a
// second limiter of the same policy name and windows from New is refused.
//
// The limiter returned shares l's life: closing either closes both. A
// second call with the same limits returns the same limiter, so a
// resolver may call WithLimits per request (it allocates nothing then).
// Limits are checked as NewPolicy checks them; an error wraps
// ErrInvalidPolicy.
func (l *Limiter) WithLimits(limits ...int64) (*Limiter, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	var key [MaxWindows]int64
	same := len(limits) == len(l.policy.rates)
	for i, n := range limits {
		if i >= MaxWindows || i >= len(l.policy.rates) {
			break // Policy.WithLimits says what is wrong
		}
		key[i] = n
		same = same && n == l.policy.rates[i].Limit
	}
	if same {
		return l, nil
	}
	pl := &l.plans
	pl.mu.Lock()
	if nl, ok := pl.m[key]; ok && len(limits) == len(nl.policy.rates) {
		pl.mu.Unlock()
		return nl, nil
	}
	pl.mu.Unlock()
	q, err := l.policy.WithLimits(limits...)
	if err != nil {
		return nil, err
	}
	nl := &Limiter{policy: q, shared: l.shared}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if prev, ok := pl.m[key]; ok {
		return prev, nil
	}
	if len(pl.m) < maxPlans {
		if pl.m == nil {
			pl.m = make(map[[MaxWindows]int64]*Limiter)
		}
		pl.m[key] = nl
	}
	return nl, nil
}
