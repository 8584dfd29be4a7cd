package limiter

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/cache"
)

// A Limiter controls how often each key (a client, a user, an API key) may
// act, by counting in fixed windows. It applies one Policy to any number of
// keys over a Store, in memory unless WithStore says otherwise.
//
// Windows are aligned to the Unix epoch, not to a key's first request: with
// a one-minute window every key's count starts again at every UTC minute
// (12:01:00.000, 12:02:00.000, ...), and a one-day window at 00:00 UTC
// (PerDayIn counts days from a zone's own midnights instead). A
// key holds one counter per window; the first request of a new window
// finds the old count stale and starts from zero, so nothing runs per key
// between requests.
//
// A fixed window admits up to twice its limit across a boundary: a client
// may spend its whole budget at 12:00:59.9 and a fresh one at 12:01:00.0.
// That is the algorithm, not a fault. Where it matters, layer a short
// window under the long one, as in NewPolicy("api", PerMinute(100),
// PerSecond(5)): a request is admitted only if every window has room, and
// then every window is charged. The short window bounds how fast a burst
// comes (here at most 10 in any second, across a second's boundary), not
// the long window's worst case, which stays twice its limit.
//
// Call Allow once per request, with the request's cost (1, or a weight): it
// decides and charges in one atomic step. A refusal is a Decision with
// Allowed false and a nil error; RetryAfter says how long until the window
// that refused starts again. Peek asks without charging; Reset forgets a
// key. The limiter reads its clock once per decision (WithClock), so tests
// cross windows by moving a fake clock instead of sleeping.
//
// A limit is looked up when a request is decided, never stored: the
// counters belong to the key, under the policy's name and windows. So
// For returns a limiter that decides the same usage under a Plan's
// limits, in a customer's zone, for plans chosen per request (a
// customer's plan looked up in a database): a customer moved from 1,000
// a month to 2,000 within a month keeps what they used.
//
// Build a Limiter with New, and Close it when done to stop the in-memory
// store's sweep. A Limiter is safe for concurrent use. The zero Limiter has
// no policy and no store and is not usable.
type Limiter struct {
	policy *Policy
	zone   string // the zone For derived it in ("" for New's)
	*shared
}

// shared is what a limiter New made (root) and the limiters its For
// returns have in common: the store, the clock, the claim and the life.
// The claim ends when shared is closed or unreachable, so while any of
// them is in use it holds.
type shared struct {
	store    Store
	clock    Clock
	owned    *MemoryStore // the default store, closed by Close
	release  func()       // gives up the policy's claim on a store given with WithStore (see claim)
	claimed  *claimToken  // the claim release gives up, for WithReplace
	closed   atomic.Bool
	root     *Limiter
	variants *cache.Map[variant, *Limiter] // For's limiters
	recent   atomic.Pointer[cache.Recent[Plan, Limiter]]
}

// An Option configures New. An option only records its argument; New
// checks them all, once, and reports a bad one as an error wrapping
// ErrInvalidOption that names it. A nil Option, or an option given a nil
// argument, is such an error.
type Option func(*config)

// config is what the options set, for New to check.
type config struct {
	store    Store
	clock    Clock
	storeSet bool
	clockSet bool
	lease    time.Duration // WithInFlightLease, for NewInFlight only
	leaseSet bool
	// WithReplace: the claim of the limiter replaced (nil for one that
	// holds none), and whether old was nil.
	replaces   *claimToken
	replaceSet bool
	replaceNil bool
	// WithResolutions: how many resolutions For keeps.
	resolutions    int
	resolutionsSet bool
}

// checkResolutions reports a bound WithResolutions cannot keep, and
// returns the bound to keep.
func (c *config) checkResolutions() (int, error) {
	switch {
	case !c.resolutionsSet:
		return defaultResolutions, nil
	case c.resolutions < 8:
		return 0, fmt.Errorf("%w: WithResolutions(%d): keep at least 8", ErrInvalidOption, c.resolutions)
	}
	return c.resolutions, nil
}

// WithStore sets the store (default: a new MemoryStore owned by the
// limiter). The caller keeps ownership of a store it passes: Close does not
// close it, so one store may serve several limiters. A nil store is an
// error, not a request for the default: leave the option out for that.
//
// Stores count by policy name and window (see Policy), so limiters of
// one policy ID on one store would share one budget without saying so,
// whatever their limits. New refuses a limiter whose policy ID another
// live limiter already counts on the same store value: give each its own
// policy name, or, to share a budget on purpose (two routes, or an HTTP
// and a gRPC door), share one Limiter, or decide under a plan's limits
// with its For. A limiter's claim ends with Close, or when it is
// garbage collected; a limiter built again to take the place of a live
// one (a reload) names it with WithReplace. Replicas, each with a store
// value of its own on one Redis, share the limit as they should.
func WithStore(s Store) Option {
	return func(c *config) { c.store, c.storeSet = s, true }
}

// WithClock sets the clock (default: the system clock, time.Now). Tests pass a fake clock
// (limitertest.Clock) to cross windows without sleeping. It is the only
// clock to set: the store, the middleware and the headers take their
// instants from the limiter's requests, never from clocks of their own.
// With any clock given, the default store runs no background
// sweep, which would run on real time (see MemoryStore): past windows are
// freed by the requests that touch them.
func WithClock(clk Clock) Option {
	return func(c *config) { c.clock, c.clockSet = clk, true }
}

// New returns a limiter for p. Configuration errors are reported here, never
// by a later call: a bad policy wraps ErrInvalidPolicy, a bad option
// ErrInvalidOption.
func New(p *Policy, opts ...Option) (*Limiter, error) {
	if err := p.check(); err != nil {
		return nil, err
	}
	c := config{clock: systemClock{}}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	switch {
	case c.storeSet && isNil(c.store):
		return nil, fmt.Errorf("%w: WithStore(%s): store is nil", ErrInvalidOption, nilName(c.store))
	case c.clockSet && isNil(c.clock):
		return nil, fmt.Errorf("%w: WithClock(%s): clock is nil", ErrInvalidOption, nilName(c.clock))
	case c.leaseSet:
		return nil, fmt.Errorf("%w: WithInFlightLease(%v) does not apply to New: it sets an InFlight's lease (NewInFlight)", ErrInvalidOption, c.lease)
	}
	if err := c.checkReplace(); err != nil {
		return nil, err
	}
	kept, err := c.checkResolutions()
	if err != nil {
		return nil, err
	}
	l := &Limiter{policy: p, shared: &shared{store: c.store, clock: c.clock, variants: newVariants(kept)}}
	l.root = l
	if c.storeSet {
		release, tok, ok := claim(l.shared, c.store, p.ID(), c.replaces)
		if !ok {
			return nil, fmt.Errorf("%w: WithStore: policy %q (%s) is already counted on this store by another limiter%s: "+
				"the two would share one budget; give each limiter a policy of its own name, share one Limiter, "+
				"decide under a plan's limits with its For, or name the limiter this one replaces with WithReplace",
				ErrInvalidOption, p.Name(), p, replacedNote(&c))
		}
		l.release, l.claimed = release, tok
	}
	if l.store == nil {
		var mopts []MemoryOption
		if c.clockSet {
			// The background sweep runs on real time (see MemoryStore):
			// under a fake clock standing still it would free the window
			// the clock is in.
			mopts = append(mopts, WithSweepInterval(0))
		}
		s, err := NewMemoryStore(mopts...)
		if err != nil {
			return nil, err
		}
		l.store, l.owned = s, s
	}
	return l, nil
}

// MustNew is New that panics on error, for a limiter whose policy and
// options are fixed in code, as MustPolicy is for policies. A store made
// at run time (Redis) is better checked: call New and handle its error.
func MustNew(p *Policy, opts ...Option) *Limiter {
	l, err := New(p, opts...)
	if err != nil {
		panic(err)
	}
	return l
}

// Allow decides whether key may spend cost now, and charges it if so. A
// refusal is a Decision with Allowed false and a nil error. A cost above
// a window's limit is refused without charge and without a wait
// (Decision.CostExceedsLimit). Errors report a cost ≤ 0 or an empty
// key (no state is created), a done context, or a store that could not
// decide.
//
// An error from the store does not mean nothing was charged. A remote
// store may apply the charge and then fail to answer in time: a decision
// that timed out or was cancelled, or whose reply was lost, may still
// count against the key. Only the errors found before the store is asked
// (a cost ≤ 0, an empty key, a closed limiter, a context already done) are
// sure to have charged nothing.
func (l *Limiter) Allow(ctx context.Context, key string, cost int64) (Decision, error) {
	if err := l.check(ctx, key, cost); err != nil {
		return Decision{}, err
	}
	return l.store.Take(ctx, Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: cost})
}

// AllowAt is Allow at the instant now rather than the clock's reading.
// The middleware reads the limiter's clock once per decision and decides
// with AllowAt, so that the same instant decides and dates the headers.
func (l *Limiter) AllowAt(ctx context.Context, key string, cost int64, now time.Time) (Decision, error) {
	if err := l.check(ctx, key, cost); err != nil {
		return Decision{}, err
	}
	return l.store.Take(ctx, Request{Key: key, Policy: l.policy, Now: now, Cost: cost})
}

// Peek answers what Allow would, charging nothing.
func (l *Limiter) Peek(ctx context.Context, key string, cost int64) (Decision, error) {
	if err := l.check(ctx, key, cost); err != nil {
		return Decision{}, err
	}
	return l.store.Take(ctx, Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: cost, Peek: true})
}

// check reports what no store need be asked: a closed limiter, a cost of
// zero or less, an empty key, a done context. Each method builds its
// Request in place: a shared helper taking the instant as an argument
// spilled its arguments to the stack and cost Allow 5 ns.
func (l *Limiter) check(ctx context.Context, key string, cost int64) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if cost <= 0 {
		return ErrInvalidCost
	}
	if key == "" {
		return ErrInvalidKey
	}
	return ctx.Err()
}

// Reset forgets key's counters: its next request starts a fresh budget,
// under every plan's limits (For's limiters share them). It reads the clock once,
// for stores that find the current windows by the time (see Store).
//
// On the memory store it takes effect at once. On a store shared by
// replicas (redisstore) the counters go at once, and every replica obeys
// within one second: what a replica keeps locally (its over-limit
// cache, its leases) is at most a second old when it decides by it.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.closed.Load() {
		return ErrClosed
	}
	if key == "" {
		return ErrInvalidKey
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return l.store.Reset(ctx, key, l.policy, l.clock.Now())
}

// Refund returns cost to the windows d charged for key, read the clock
// once, for a charge that turned out free (the response the request got
// was not one to count). Each window is refunded only while it is still
// current (a request charged at 12:00:59.9 and answered at 12:01:00.1
// refunds nothing) and never below zero; a refusal, or a decision charged
// to nothing, refunds nothing. See Store.Refund.
func (l *Limiter) Refund(ctx context.Context, key string, cost int64, d Decision) error {
	if err := l.check(ctx, key, cost); err != nil {
		return err
	}
	return l.store.Refund(ctx, Request{Key: key, Policy: l.policy, Now: l.clock.Now(), Cost: cost}, d)
}

// Policy returns the limiter's policy.
func (l *Limiter) Policy() *Policy { return l.policy }

// Clock returns the limiter's clock, the one clock its requests are
// decided by. The middleware reads it to date requests for AllowAt.
func (l *Limiter) Clock() Clock { return l.clock }

// Close ends the limiter, and the limiters its For returned (or,
// called on one of those, the limiter it came from and all of them):
// later calls return ErrClosed. It also closes the default store if the
// limiter made it; a store passed with WithStore is left open for its
// owner and any other limiter on it. Close is idempotent.
func (l *Limiter) Close() error {
	l.closed.Store(true)
	if l.release != nil {
		l.release()
	}
	if l.owned != nil {
		return l.owned.Close()
	}
	return nil
}

// isNil reports whether v is nil or a typed nil pointer, such as the
// *MemoryStore a failed NewMemoryStore returns beside its error: kept in an
// interface, it is not == nil, and would panic on the first request.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// nilName names a nil argument for an error: "nil", or "(*T)(nil)".
func nilName(v any) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("(%T)(nil)", v)
}
