package limiter

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unique"

	"github.com/fixedwindow/ratelimit/internal/cache"
)

// defaultInFlightLease is WithInFlightLease's default.
const defaultInFlightLease = 10 * time.Second

// An InFlight caps how many requests of each key run at once: at most
// max per key (a client, a tenant, an API key), whatever their rate. It
// is the limit for requests that are expensive because they are long (a
// report export, a model call): a rate of 100 a minute admits ten of
// them at once, a cap of 5 never more than five.
//
// Acquire takes a slot for a request, or refuses when the key holds max;
// the request gives its slot back by calling the release func Acquire
// returned, once it has ended, on every path out (defer it). A slot is
// counted in the store (WithStore): in memory by default, for one
// process; in Redis (a *redisstore.Store), for every replica at once, so
// that N replicas admit max requests of a key in all, not N times max.
//
// A cap has no window and nothing to wait for but the end of other
// requests, which nobody can foresee. A refusal's RetryAfter is the time
// this InFlight's slots were held on average lately (an exponentially
// weighted mean of the hold times its releases saw, by its clock), at
// least 1s, and 1s before the first release: by then the typical request
// holding a slot has ended. Its ResetAt is the decision's instant plus
// RetryAfter; an admission has a zero ResetAt.
//
// In Redis a slot is leased: a replica renews the slots it holds in the
// background, so a request may run for as long as it likes, and a
// replica that dies holding slots (kill -9, a lost node) gives them back
// within the lease (WithInFlightLease, default 10s). In memory a slot
// lives until it is released: nothing in it depends on a clock, so no
// clock step frees a held slot early.
//
// Build one with NewInFlight and Close it when done. An InFlight is safe
// for concurrent use. The zero InFlight is not usable.
type InFlight struct {
	policy  *Policy
	store   SlotStore
	clock   Clock
	lease   time.Duration
	owned   *MemoryStore // the default store, closed by Close
	closed  atomic.Bool
	reduced atomic.Pointer[Policy] // the last cap a store applied below max (a fallback's)
	unclaim func()
	claimed *claimToken // the claim unclaim gives up, for WithReplace
	once    sync.Once
	// base is the InFlight NewInFlight made, for one For returned (nil
	// for itself): its life and its hold times are base's.
	base     *InFlight
	variants *cache.Map[int64, *InFlight] // For's caps, by maximum
	// hold is the weighted mean time a slot was held, ns: RetryAfter.
	// Releases write it; it has cache lines of its own, away from the
	// fields every Acquire reads.
	_    [64]byte
	hold atomic.Int64
	_    [56]byte
}

// WithInFlightLease sets how long a slot outlives a replica that died
// holding it (default 10s; at least 1s), for NewInFlight: a shared store
// (Redis) renews each live slot every quarter to three eighths of the
// lease, and lets the slots nobody renews go when their lease ends. A
// shorter lease frees a dead replica's slots sooner at the price of more
// renewals of long requests (none for a request shorter than a quarter
// of it). The memory store keeps slots until they are released and
// ignores it. New refuses it: a rate has no slots.
func WithInFlightLease(d time.Duration) Option {
	return func(c *config) { c.lease, c.leaseSet = d, true }
}

// NewInFlight returns a cap of max requests at once per key, named name
// (1 to 64 characters of A-Z, a-z, 0-9, '_', '-' and '.': it names the
// cap in storage keys, headers and metrics; give it a name no rate
// policy beside it has). max is 1 to MaxLimit. Options: WithStore (a
// store that keeps slots, SlotStore: the memory store, the default, or
// a *redisstore.Store), WithClock (dates decisions and times hold times
// for RetryAfter) and WithInFlightLease. Configuration errors are
// reported here: a bad name or max wraps ErrInvalidPolicy, a bad option
// (nil, a store without slots, a lease under 1s) ErrInvalidOption, and
// so does a second live InFlight of the same name on one store, which
// would share its slots unknowingly: sharing a cap means sharing one
// *InFlight, and building it again (a reload) naming the live one with
// WithReplace.
func NewInFlight(name string, max int64, opts ...Option) (*InFlight, error) {
	p, err := newInFlightPolicy(name, max)
	if err != nil {
		return nil, err
	}
	c := config{clock: systemClock{}, lease: defaultInFlightLease}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: option %d is nil", ErrInvalidOption, i)
		}
		o(&c)
	}
	kept, err := c.checkResolutions()
	if err != nil {
		return nil, err
	}
	f := &InFlight{policy: p, clock: c.clock, lease: c.lease, variants: newCapVariants(kept)}
	switch {
	case c.storeSet && isNil(c.store):
		return nil, fmt.Errorf("%w: WithStore(%s): store is nil", ErrInvalidOption, nilName(c.store))
	case c.clockSet && isNil(c.clock):
		return nil, fmt.Errorf("%w: WithClock(%s): clock is nil", ErrInvalidOption, nilName(c.clock))
	case c.lease < minInFlightLease:
		return nil, fmt.Errorf("%w: WithInFlightLease(%v): lease must be ≥ %v", ErrInvalidOption, c.lease, minInFlightLease)
	}
	if err := c.checkReplace(); err != nil {
		return nil, err
	}
	switch {
	case c.storeSet:
		ss, ok := c.store.(SlotStore)
		if !ok {
			return nil, fmt.Errorf("%w: WithStore(%T): the store keeps no in-flight slots (it is no SlotStore)", ErrInvalidOption, c.store)
		}
		f.store = ss
		release, tok, ok := claim(f, c.store, p.id, c.replaces)
		if !ok {
			return nil, fmt.Errorf("%w: WithStore: an InFlight named %q is already live on this store%s; share that *InFlight, close it first, "+
				"or name it with WithReplace", ErrInvalidOption, name, replacedNote(&c))
		}
		f.unclaim, f.claimed = release, tok
	default:
		// No sweep: slots need none, and an InFlight starts no goroutine.
		s, err := NewMemoryStore(WithSweepInterval(0))
		if err != nil {
			return nil, err
		}
		f.store, f.owned = s, s
	}
	return f, nil
}

// MustInFlight is NewInFlight that panics on error, for caps fixed in
// code.
func MustInFlight(name string, max int64, opts ...Option) *InFlight {
	f, err := NewInFlight(name, max, opts...)
	if err != nil {
		panic(err)
	}
	return f
}

// newInFlightPolicy returns the policy that names a cap of max: no
// rates, and an id apart from every rate policy's (theirs hold a
// "limit/window" after the name).
func newInFlightPolicy(name string, max int64) (*Policy, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: in-flight cap has no name", ErrInvalidPolicy)
	}
	if err := validateName(name); err != nil {
		return nil, err
	}
	if max <= 0 || max > MaxLimit {
		return nil, fmt.Errorf("%w: in-flight cap %q: max %d must be in [1, %d]", ErrInvalidPolicy, name, max, MaxLimit)
	}
	id := name + ":in-flight"
	return &Policy{name: name, id: id, tag: fnv64a(id), uid: unique.Make(id), inFlight: max}, nil
}

// fnv64a is FNV-1a of s, as NewPolicy tags a policy.
func fnv64a(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// MaxInFlight returns the cap of an InFlight's policy (InFlight.Policy):
// at most that many requests of a key at once. It is 0 for a policy of
// rates (NewPolicy).
func (p *Policy) MaxInFlight() int64 {
	if p == nil {
		return 0
	}
	return p.inFlight
}

// Acquire takes a slot for a request of key, or refuses when key holds
// the maximum. On admission it returns a Decision whose Limit is the
// maximum and Remaining the slots left after this request, and release,
// which gives the slot back: call it once the request has ended, on every
// path (defer it). release is idempotent, safe from any goroutine, and
// harmless after Close (the slot still goes back to a store that is
// open). A refusal is a Decision with Allowed false, Remaining 0, a
// RetryAfter (see InFlight) and a nil release, never an error.
//
// Errors report an empty key, a closed InFlight or a done context (no
// slot taken), or a store that could not decide: then a slot may have
// been taken without a reply, which the store lets go by itself (see
// SlotStore).
func (f *InFlight) Acquire(ctx context.Context, key string) (d Decision, release func(), err error) {
	if f.root().closed.Load() {
		return Decision{}, nil, ErrClosed
	}
	if key == "" {
		return Decision{}, nil, ErrInvalidKey
	}
	if err := ctx.Err(); err != nil {
		return Decision{}, nil, err
	}
	now := f.clock.Now()
	req := SlotRequest{Key: key, Policy: f.policy, Max: f.policy.inFlight, Lease: f.lease}
	s, err := f.store.AcquireSlot(ctx, req)
	if err != nil {
		return Decision{}, nil, err
	}
	// Filled in place, as Dated would date it: a Decision is 120 bytes,
	// and copies of it were a tenth of an Acquire.
	d.Allowed, d.Limit, d.Remaining, d.Policy = s.Acquired, s.Max, max(0, s.Max-s.Held), f.policyFor(s.Max)
	d.nowMs, d.datedNs = now.UnixMilli(), datedNs(now)
	if !s.Acquired {
		// Whatever the store counted (a store that could not read the
		// key's slots refuses holding none), a refusal leaves nothing.
		d.Remaining = 0
		d.RetryAfter = f.root().retryAfter()
		d.ResetAt = now.Add(d.RetryAfter)
		return d, nil, nil
	}
	h := heldPool.Get().(*held)
	h.f, h.key, h.slot, h.start = f, key, s, now.UnixNano()
	gen := h.gen.Load()
	return d, func() { h.release(gen) }, nil
}

// A held slot, for its release func. Helds are pooled: a release func
// holds its held and the generation it was made in, and acts only while
// the held is still in that generation, so that a second call, even once
// the held serves another slot, does nothing. That makes an Acquire one
// allocation (the func) rather than two.
type held struct {
	f     *InFlight
	key   string
	slot  Slot
	start int64 // Unix ns, by the InFlight's clock
	gen   atomic.Uint64
}

var heldPool = sync.Pool{New: func() any { return new(held) }}

func (h *held) release(gen uint64) {
	if !h.gen.CompareAndSwap(gen, gen+1) {
		return
	}
	// What h refers to stays referred to until its next use, or until
	// the pool drops it: clearing it costs write barriers on every
	// release.
	f, key, s, start := h.f, h.key, h.slot, h.start
	heldPool.Put(h)
	f.root().observeHold(time.Duration(f.clock.Now().UnixNano() - start))
	req := SlotRequest{Key: key, Policy: f.policy, Max: s.Max, Lease: f.lease}
	// The store bounds the call itself, and lets the slot go by itself
	// when it cannot be reached: nothing for the caller to do.
	_ = f.store.ReleaseSlot(context.Background(), req, s)
}

// maxHoldSample bounds one hold time in RetryAfter's mean, so that a
// clock stepped by years between an acquire and its release does not
// tell clients to wait as long.
const maxHoldSample = time.Hour

// observeHold adds a slot held for d to the mean hold time (7/8 the old,
// 1/8 the new; the first sets it). Concurrent releases may lose a
// sample: the mean is an estimate.
func (f *InFlight) observeHold(d time.Duration) {
	d = min(max(d, 0), maxHoldSample)
	old := f.hold.Load()
	next := old - old/8 + int64(d)/8
	if old == 0 {
		next = max(int64(d), 1)
	}
	if next != old { // a steady mean writes nothing
		f.hold.Store(next)
	}
}

// retryAfter is the RetryAfter of a refusal: the mean hold time, at
// least 1s.
func (f *InFlight) retryAfter() time.Duration {
	return max(time.Second, time.Duration(f.hold.Load()))
}

// policyFor returns the policy of a decision made against m slots: the
// cap's own, or one of the same name and m (a store's fallback while
// degraded), so that the headers tell the cap actually applied.
func (f *InFlight) policyFor(m int64) *Policy {
	if m == f.policy.inFlight || m <= 0 {
		return f.policy
	}
	if p := f.reduced.Load(); p != nil && p.inFlight == m {
		return p
	}
	p := &Policy{name: f.policy.name, id: f.policy.id, tag: f.policy.tag, uid: f.policy.uid, inFlight: m}
	f.reduced.Store(p)
	return p
}

// Usage returns how many slots key holds now (Usage.Held), of the cap's
// maximum (its Policy's MaxInFlight), taking none: on a shared store
// (Redis), every replica's. Errors report an empty key, a closed InFlight,
// a done context, or a store that could not answer.
func (f *InFlight) Usage(ctx context.Context, key string) (Usage, error) {
	if f.root().closed.Load() {
		return Usage{}, ErrClosed
	}
	if key == "" {
		return Usage{}, ErrInvalidKey
	}
	if err := ctx.Err(); err != nil {
		return Usage{}, err
	}
	req := SlotRequest{Key: key, Policy: f.policy, Max: f.policy.inFlight, Lease: f.lease, Peek: true}
	s, err := f.store.AcquireSlot(ctx, req)
	if err != nil {
		return Usage{}, err
	}
	if s.Acquired {
		// A store that knows no Peek took a slot: give it back, and
		// answer what was held before it.
		if err := f.store.ReleaseSlot(context.WithoutCancel(ctx), req, s); err != nil {
			return Usage{}, fmt.Errorf("limiter: %T took a slot to read the usage (it ignores SlotRequest.Peek), and could not give it back: %w", f.store, err)
		}
		s.Held--
	}
	return Usage{Policy: f.policy, At: f.clock.Now(), Held: s.Held}, nil
}

// Policy returns the policy that names the cap: its name, and its
// maximum (MaxInFlight). It decides no rate: New refuses it.
func (f *InFlight) Policy() *Policy { return f.policy }

// Clock returns the InFlight's clock, which dates its decisions. The
// middleware reads it to time holds for its observer.
func (f *InFlight) Clock() Clock { return f.clock }

// root returns the InFlight NewInFlight made: f, or its base.
func (f *InFlight) root() *InFlight {
	if f.base != nil {
		return f.base
	}
	return f
}

// Close ends the InFlight: later calls to Acquire return ErrClosed, and
// its name is free on its store for another InFlight. Slots held stay
// held until released; a release after Close still gives its slot back
// to a store that is open. Close closes the default store if the
// InFlight made it, and leaves one passed with WithStore open. Close is
// idempotent.
func (f *InFlight) Close() error {
	if f.base != nil {
		return f.base.Close()
	}
	f.closed.Store(true)
	f.once.Do(func() {
		if f.unclaim != nil {
			f.unclaim()
		}
	})
	if f.owned != nil {
		return f.owned.Close()
	}
	return nil
}
