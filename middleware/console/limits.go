package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A source is what the console reads and changes: the limiters and caps
// the service registered, and how a key's plan is looked up. Every call
// the console makes into them is in this file.
type source struct {
	limiters []*limiter.Limiter
	caps     []*limiter.InFlight
	plan     func(ctx context.Context, key string) (*limiter.Plan, string, error)
}

// read returns what key has used of every limiter and cap, each read on
// a goroutine of its own, so that one unreachable store makes the whole
// read last its timeout once, not once per limiter.
func (s *source) read(ctx context.Context, key string) (limiters, caps []reading) {
	ls := make([]reading, len(s.limiters))
	cs := make([]reading, len(s.caps))
	plan, zone, perr := s.lookup(ctx, key)
	var wg sync.WaitGroup
	for i, l := range s.limiters {
		ls[i].name = l.Policy().Name()
		if perr != nil {
			ls[i].err = perr
			continue
		}
		wg.Go(func() {
			kl, err := s.limiterFor(plan, zone, l)
			if err == nil {
				ls[i].u, err = kl.Usage(ctx, key)
			}
			ls[i].err = err
		})
	}
	for i, f := range s.caps {
		cs[i].name = f.Policy().Name()
		if perr != nil {
			cs[i].err = perr
			continue
		}
		wg.Go(func() {
			kf, err := f.For(plan)
			if err != nil {
				cs[i].err = fmt.Errorf("console: cap %q under the key's plan: %w", f.Policy().Name(), err)
				return
			}
			cs[i].u, cs[i].err = kf.Usage(ctx, key)
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

// lookup returns key's plan and zone: Config.Plan's, or none (nil, "":
// every limit its own).
func (s *source) lookup(ctx context.Context, key string) (*limiter.Plan, string, error) {
	if s.plan == nil {
		return nil, "", nil
	}
	plan, zone, err := s.plan(ctx, key)
	switch {
	case err != nil:
		return nil, "", fmt.Errorf("console: the plan of %q: %w", key, err)
	case plan == nil:
		return nil, "", fmt.Errorf("console: Config.Plan returned no plan for %q and no error", key)
	}
	return plan, zone, nil
}

// limiterFor returns the limiter that decides the usage of l's policy
// under plan in zone: l itself without a plan.
func (s *source) limiterFor(plan *limiter.Plan, zone string, l *limiter.Limiter) (*limiter.Limiter, error) {
	kl, err := l.For(plan, zone)
	if err != nil {
		return nil, fmt.Errorf("console: %q under the key's plan: %w", l.Policy().Name(), err)
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
// policy, after reading them, and says what each window got back: an
// amount past the most the key used in any of them is refused, and so
// is one of a policy no limiter has.
func (s *source) refund(ctx context.Context, key, policy string, amount int64) ([]returned, error) {
	var l *limiter.Limiter
	for _, c := range s.limiters {
		if c.Policy().Name() == policy {
			l = c
		}
	}
	if l == nil {
		return nil, &refusal{http.StatusBadRequest, fmt.Sprintf("console: no limiter has policy %q", policy)}
	}
	plan, zone, err := s.lookup(ctx, key)
	if err != nil {
		return nil, err
	}
	kl, err := s.limiterFor(plan, zone, l)
	if err != nil {
		return nil, err
	}
	u, err := kl.Usage(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("console: read %q: %w", policy, err)
	}
	var used int64
	for _, w := range u.Windows {
		used = max(used, w.Used)
	}
	if amount > used {
		return nil, &refusal{http.StatusConflict, fmt.Sprintf("console: refund of %d is past what the key used under %q (%d at most in any window now): nothing refunded", amount, policy, used)}
	}
	before := kl.Clock().Now()
	if err := kl.RefundUsage(ctx, key, amount, u); err != nil {
		return nil, fmt.Errorf("console: refund %q: %w", policy, err)
	}
	after := kl.Clock().Now()
	// RefundUsage gives nothing to a window that ended between the read
	// and the refund, and takes a window down to zero at most.
	back := make([]returned, len(u.Windows))
	for i, w := range u.Windows {
		back[i] = returned{window: w.Name, most: min(amount, w.Used)}
		switch {
		case w.ResetAt.After(after):
			back[i].least = back[i].most
		case !w.ResetAt.After(before):
			back[i].most, back[i].ended = 0, true
		}
	}
	return back, nil
}

// A returned is what a refund gave back to one window: most, unless
// the window ended while the refund ran (then between least and most).
type returned struct {
	window      string
	least, most int64
	ended       bool // before the refund began: it got nothing
}

// refundNotice says what a refund gave back: "3 returned", or per
// window when the windows got different amounts, "0 returned to 1m0s
// (its window had ended), 3 to day@Europe/Paris".
func refundNotice(back []returned) string {
	same := len(back) > 0 && back[0].least == back[0].most
	for _, b := range back {
		same = same && b.least == back[0].least && b.most == back[0].most && b.ended == back[0].ended
	}
	if same {
		return fmt.Sprintf("%d returned", back[0].most)
	}
	parts := make([]string, len(back))
	for i, b := range back {
		switch {
		case b.ended:
			parts[i] = fmt.Sprintf("0 to %s (its window had ended)", b.window)
		case b.least == b.most:
			parts[i] = fmt.Sprintf("%d to %s", b.most, b.window)
		default:
			parts[i] = fmt.Sprintf("%d or %d to %s (its window ended during the refund)", b.least, b.most, b.window)
		}
	}
	return "returned " + strings.Join(parts, ", ")
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
