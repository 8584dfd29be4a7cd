package console

import (
	"context"
	"fmt"
	"net/http"
	"sync"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A source is what the console reads and changes: the limiters and caps
// the service registered, and how a key's own limiter is chosen. Every
// call the console makes into them is in this file, so that choosing a
// customer's limits another way (a plan and a zone) changes this file
// alone.
type source struct {
	limiters []*limiter.Limiter
	caps     []*limiter.InFlight
	resolve  func(ctx context.Context, key string, l *limiter.Limiter) (*limiter.Limiter, error)
}

// read returns what key has used of every limiter and cap, each read on
// a goroutine of its own, so that one unreachable store makes the whole
// read last its timeout once, not once per limiter.
func (s *source) read(ctx context.Context, key string) (limiters, caps []reading) {
	ls := make([]reading, len(s.limiters))
	cs := make([]reading, len(s.caps))
	var wg sync.WaitGroup
	for i, l := range s.limiters {
		wg.Go(func() {
			ls[i].name = l.Policy().Name()
			kl, err := s.limiterFor(ctx, key, l)
			if err == nil {
				ls[i].u, err = kl.Usage(ctx, key)
			}
			ls[i].err = err
		})
	}
	for i, f := range s.caps {
		wg.Go(func() {
			cs[i].name = f.Policy().Name()
			cs[i].u, cs[i].err = f.Usage(ctx, key)
		})
	}
	wg.Wait()
	return ls, cs
}

// A reading is one limiter's or cap's usage of a key, or why there is
// none.
type reading struct {
	name string
	u    limiter.Usage
	err  error
}

// limiterFor returns the limiter that decides key's requests in l's
// place: Config.Resolve's choice, or l.
func (s *source) limiterFor(ctx context.Context, key string, l *limiter.Limiter) (*limiter.Limiter, error) {
	if s.resolve == nil {
		return l, nil
	}
	kl, err := s.resolve(ctx, key, l)
	switch {
	case err != nil:
		return nil, fmt.Errorf("console: resolve %q: %w", l.Policy().Name(), err)
	case kl == nil || !kl.Policy().SameUsage(l.Policy()):
		return nil, fmt.Errorf("console: Config.Resolve returned no limiter of policy %q's usage", l.Policy().Name())
	}
	return kl, nil
}

// reset forgets key's counters under every limiter. It stops at the
// first that fails, and says which.
func (s *source) reset(ctx context.Context, key string) error {
	for _, l := range s.limiters {
		if err := l.Reset(ctx, key); err != nil {
			return fmt.Errorf("console: reset %q: %w", l.Policy().Name(), err)
		}
	}
	return nil
}

// refund returns amount to key's current windows of the limiter named
// policy, after reading them: an amount past the most the key used in
// any of them is refused, and so is one of a policy no limiter has.
func (s *source) refund(ctx context.Context, key, policy string, amount int64) error {
	var l *limiter.Limiter
	for _, c := range s.limiters {
		if c.Policy().Name() == policy {
			l = c
		}
	}
	if l == nil {
		return &refusal{http.StatusBadRequest, fmt.Sprintf("console: no limiter has policy %q", policy)}
	}
	kl, err := s.limiterFor(ctx, key, l)
	if err != nil {
		return err
	}
	u, err := kl.Usage(ctx, key)
	if err != nil {
		return fmt.Errorf("console: read %q: %w", policy, err)
	}
	var used int64
	for _, w := range u.Windows {
		used = max(used, w.Used)
	}
	if amount > used {
		return &refusal{http.StatusConflict, fmt.Sprintf("console: refund of %d is past what the key used under %q (%d at most in any window now): nothing refunded", amount, policy, used)}
	}
	if err := kl.RefundUsage(ctx, key, amount, u); err != nil {
		return fmt.Errorf("console: refund %q: %w", policy, err)
	}
	return nil
}

// policyNames returns the names of the limiters and of the caps, for New
// to check that none is given twice.
func (s *source) policyNames() (limiters, caps []string) {
	for _, l := range s.limiters {
		limiters = append(limiters, l.Policy().Name())
	}
	for _, f := range s.caps {
		caps = append(caps, f.Policy().Name())
	}
	return limiters, caps
}

// clock is the clock the console dates its events by: the first
// limiter's, else the first cap's, so that a test's fake clock dates them
// too.
func (s *source) clock() limiter.Clock {
	if len(s.limiters) > 0 {
		return s.limiters[0].Clock()
	}
	return s.caps[0].Clock()
}
