package redisstore

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Defaults of WithLeases, and how many keys a store tracks for leasing.
const (
	defaultLeaseHorizon = 50 * time.Millisecond
	defaultLeaseDivisor = 64
	defaultLeaseKeys    = 1 << 14
)

// WithLeases lets a hot key be decided on this replica without a round
// trip. A request that goes to Redis may also take a lease of part of its
// key's budget, in the same atomic script call that decides it: the
// lease is charged to every window of the policy at once, and granted only
// from what every window has left, so the sum of leases and direct
// charges never exceeds any limit, across all replicas. Later requests on
// this replica are decided from the lease, locally, until it is spent or
// the earliest of its windows ends.
//
// A lease is sized from the key's local rate: about the rate times
// horizon (0: the default, 50ms), never more than the rate times the time
// left in the window, and at most max(1, limit/divisor) (0: the default,
// 64) for the policy's smallest limit. A key
// seen once in its window leases nothing, as without leases. Units leased
// and not spent when the window ends are lost (stranded): when demand from
// R replicas exceeds the limit, each window still admits at least
// limit − R × max(1, limit/divisor). See docs/leases.md for the trade,
// and for what a lease does while Redis is away.
//
// A lease lasts at most a second from the request that asked for it, so
// that what another replica does to the key (a Reset, a refund, a lower
// limit) is obeyed here within a second: units leased and unspent then
// are lost, as at a window's end.
//
// horizon must be in (0, 1s] and a whole number of milliseconds, divisor
// ≥ 1 (or either 0); anything else makes New return an error wrapping
// ErrInvalidOption.
func WithLeases(horizon time.Duration, divisor int64) Option {
	if horizon == 0 {
		horizon = defaultLeaseHorizon
	}
	if divisor == 0 {
		divisor = defaultLeaseDivisor
	}
	return func(c *config) { c.lease = leaseConfig{on: true, horizon: horizon, divisor: divisor} }
}

type leaseConfig struct {
	on      bool
	horizon time.Duration
	divisor int64
}

func (c leaseConfig) validate() error {
	switch {
	case !c.on:
		return nil
	case c.horizon <= 0 || c.horizon > maxLocalAge || c.horizon%time.Millisecond != 0:
		return fmt.Errorf("%w: lease horizon %v must be a whole number of milliseconds in (0, %v]: a lease lasts at most that", ErrInvalidOption, c.horizon, maxLocalAge)
	case c.divisor < 1:
		return fmt.Errorf("%w: lease divisor %d must be ≥ 1", ErrInvalidOption, c.divisor)
	}
	return nil
}

// leases holds this replica's leases and the local demand that sizes
// them. Times are milliseconds in the store's time base: the request's
// instant under appClock, mono under serverClock, onto which each lease's
// end in Redis's time is mapped at its grant. An entry is a pointer to
// about 150 bytes plus the client key; a key not kept leases nothing.
type leases struct {
	shardedMap[*leaseEntry]
	horizon int64     // ms
	divisor int64     //
	keys    *keyCache // the store's: the windows of calendar rates
}

// A leaseEntry is one key's lease and demand on this replica, under one
// usage (whatever the limits of the requests that spend it). Guarded by
// its shard's mutex.
type leaseEntry struct {
	// The span: the windows of the last reply from Redis, valid for
	// start ≤ t < end, end no later than maxLocalAge after the request
	// that brought the last grant. known is false until a reply for the
	// current span.
	start, end int64
	known      bool
	ids        [limiter.MaxWindows]int64 // the windows' ids
	offset     int64                     // serverClock: the decisions' dating, t + offset (see record)
	first      int64                     // serverClock: the span's start, Redis's ms
	held       int64                     // units leased and not yet spent, in the span
	// The grants' instants, as decisions are dated (the limiter's clock,
	// or Redis's TIME under serverClock), for the reset marks (reset.lua):
	// what a lease holds unspent goes back dated by the grant that
	// leased it, and a Reset since returns nothing of it. older of held
	// were leased before the latest grant, at olderAt or later, and are
	// spent first; the rest at latestAt. firstAt is the span's first
	// grant's.
	older                      int64
	olderAt, latestAt, firstAt int64
	after                      [limiter.MaxWindows]int64 // each window's count in Redis after the last grant
	spent                      int64                     // units spent from the lease since its latest grant: what a refund may return to it

	// Demand: cost asked of this replica since the instant since.
	seen, since int64

	// pending is closed when the lease request in flight returns.
	pending chan struct{}
}

// A leaseTicket is a request's part in leasing: the lease it asks for
// and, when it is the one lease request in flight for its key, the
// channel to close when it returns; and what a lease that ended left
// unspent.
type leaseTicket struct {
	left   leftover // what the key's lease held unspent when it ended, to give back
	want   int64
	waited bool   // for another's lease request: its deadline is nearer than the timeout
	t      int64  // the request's time, in the store's time base
	epoch  uint64 // the shard's, when the request set out
	ch     chan struct{}
}

func newLeases(c leaseConfig, size int, server bool, keys *keyCache) *leases {
	if !c.on {
		return nil
	}
	l := &leases{horizon: c.horizon.Milliseconds(), divisor: c.divisor, keys: keys}
	l.init(size, server)
	return l
}

// now returns the time of req in the store's time base.
func (l *leases) now(req *limiter.Request) int64 {
	if l.server {
		return int64(l.mono() / time.Millisecond)
	}
	return req.Now.UnixMilli()
}

// take decides req from a lease on this replica when it can (ok), and
// otherwise returns the ticket with which the request goes to Redis. A
// request that finds another's lease request in flight for its key waits
// for it, until deadline, the decision's own (else err: the decision
// failed, timed out, or ctx ended), and tries the lease again; if that
// fails it goes to Redis itself, asking for nothing, with what is left
// of its deadline.
func (l *leases) take(ctx context.Context, req *limiter.Request, deadline time.Time) (d limiter.Decision, tk leaseTicket, ok bool, err error) {
	if l == nil || req.Peek {
		return d, tk, false, nil
	}
	tk.t = l.now(req)
	k := entryKey(req.Policy, req.Key)
	sh := l.shard(req.Key)
	sh.mu.Lock()
	tk.epoch = sh.epoch.Load()
	e := sh.m[k]
	if e == nil {
		if e = l.insert(sh, k, tk.t); e == nil {
			sh.mu.Unlock()
			return d, tk, false, nil
		}
	}
	tk.left = e.observe(tk.t, req.Cost)
	if d, ok = l.spend(e, req, tk.t); ok {
		sh.mu.Unlock()
		return d, tk, true, nil
	}
	if ch := e.pending; ch != nil {
		sh.mu.Unlock()
		tk.waited = true
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		select {
		case <-ch:
		case <-t.C:
			return d, tk, false, named(fmt.Errorf("%w: waiting for a lease", context.DeadlineExceeded))
		case <-ctx.Done():
			return d, tk, false, ctx.Err()
		}
		sh.mu.Lock()
		// The entry may have been dropped by Reset meanwhile.
		if e = sh.m[k]; e != nil {
			d, ok = l.spend(e, req, tk.t)
		}
		sh.mu.Unlock()
		return d, tk, ok, nil
	}
	if tk.want = l.want(e, req.Policy, tk.t); tk.want > 0 {
		tk.ch = make(chan struct{})
		e.pending = tk.ch
	}
	sh.mu.Unlock()
	return d, tk, false, nil
}

// insert adds an entry for k. When the shard is full it first drops the
// entries whose span has ended, then, if that was not enough, those that
// hold nothing (their demand is forgotten: such a key's leases grow
// again from nothing); it returns nil when still full. Entries with a
// lease request in flight are never dropped.
func (l *leases) insert(sh *shard[*leaseEntry], k shardKey, t int64) *leaseEntry {
	ended := func(e *leaseEntry) bool { return e.pending == nil && (!e.known || t >= e.end || t < e.start) }
	idle := func(e *leaseEntry) bool { return e.pending == nil && e.held == 0 }
	if !l.room(sh, ended) && !l.room(sh, idle) {
		return nil
	}
	e := &leaseEntry{since: t}
	sh.m[k] = e
	return e
}

// observe counts a request at t in the entry's demand, starting afresh
// (and dropping a lease that has ended) when t is outside the span. It
// returns what the lease that ended held unspent, for the store to give
// back to Redis: a lease ends a second after its grant (maxLocalAge),
// usually well inside its windows, where its units are still of use to
// every replica.
func (e *leaseEntry) observe(t, cost int64) (left leftover) {
	if e.known && (t >= e.end || t < e.start) {
		left = e.leftover()
		e.known, e.held, e.older, e.spent, e.seen = false, 0, 0, 0, 0
	}
	if e.seen == 0 {
		e.since = t
	}
	e.seen += cost
	return left
}

// spend decides req from the entry's lease, if it holds enough for the
// request in the request's windows and the request's limits admit it.
func (l *leases) spend(e *leaseEntry, req *limiter.Request, t int64) (d limiter.Decision, ok bool) {
	if !e.known || t < e.start || t >= e.end || e.held < req.Cost {
		return d, false
	}
	now := req.Now
	if l.server {
		// A request that read the monotonic clock before the lease
		// request it waited for maps to before the grant, perhaps into
		// the window before; it is decided from the lease, so in the
		// lease's window.
		now = time.UnixMilli(max(t+e.offset, e.first))
	}
	// Each window as Redis counted it at the last grant, less what this
	// replica still holds of it, so that the window closest to
	// exhaustion decides, as Redis would have said; and Remaining no
	// more than this replica holds after the request, a floor of what is
	// left across replicas (others may be taking the rest). The
	// request's own limits apply: a plan lowered under the count
	// refuses here, and the request asks Redis.
	var prior [limiter.MaxWindows]limiter.State
	p := req.Policy
	for i := range p.NumRates() {
		prior[i] = limiter.State{Window: e.ids[i], Count: max(0, e.after[i]-e.held)}
	}
	_, d = limiter.Decide(p, prior, now, req.Cost)
	if !d.Allowed {
		return d, false
	}
	e.held -= req.Cost
	e.older -= min(e.older, req.Cost)
	e.spent += req.Cost
	return limiter.AtMost(d, e.held), true
}

// want sizes the lease a request at t asks for: the key's local rate
// (the cost seen before this request, over the time since the first, at
// least one horizon) times the horizon or the time left in the span,
// whichever is shorter; at most the cap. A key seen once asks for
// nothing.
func (l *leases) want(e *leaseEntry, p *limiter.Policy, t int64) int64 {
	before := e.seen - 1
	if before <= 0 {
		return 0
	}
	ahead := l.horizon
	if e.known {
		ahead = min(ahead, e.end-t)
	}
	elapsed := max(t-e.since, l.horizon)
	if ahead <= 0 || before > math.MaxInt64/ahead {
		return 0
	}
	return min(before*ahead/elapsed, l.cap(p))
}

// cap returns the largest lease under p: max(1, limit/divisor) for its
// smallest limit.
func (l *leases) cap(p *limiter.Policy) int64 {
	c := int64(math.MaxInt64)
	for i := range p.NumRates() {
		c = min(c, max(1, p.Rate(i).Limit/l.divisor))
	}
	return c
}

// settle ends a request's part in leasing once Redis has answered (r, at
// the instant decided at; ok false when it did not): it records the
// windows of the reply as the key's span, adds the units granted, and
// wakes the requests waiting for this lease.
func (l *leases) settle(tk *leaseTicket, req *limiter.Request, r *result, at time.Time, ok bool) {
	if l == nil || req.Peek {
		return
	}
	if ok {
		l.record(req, r, at, tk)
	}
	if tk.ch != nil {
		sh := l.shard(req.Key)
		sh.mu.Lock()
		if e := sh.m[entryKey(req.Policy, req.Key)]; e != nil && e.pending == tk.ch {
			e.pending = nil
		}
		sh.mu.Unlock()
		close(tk.ch)
	}
}

// record notes a reply from Redis in the key's entry.
func (l *leases) record(req *limiter.Request, r *result, at time.Time, tk *leaseTicket) {
	p := req.Policy
	ms := at.UnixMilli()
	var (
		ids        [limiter.MaxWindows]int64
		start, end int64 = math.MinInt64, math.MaxInt64
	)
	pk := l.keys.get(p)
	for i := range p.NumRates() {
		id, s, e := pk.window(i, ms)
		ids[i], start, end = id, max(start, s), min(end, e)
	}
	var offset int64
	first := start
	if l.server {
		// Redis read ms between tk.t and now, the reply's arrival, by
		// the replica's clock: at any later instant t Redis's clock
		// reads between t + ms - now and t + ms - tk.t. The span ends by
		// the later reading (t read before the round trip runs ahead by
		// the time the request took to reach Redis): the lease ends
		// early, never late. Its decisions are dated by the earlier
		// (spend), never after Redis's clock: a decision made before a
		// Reset by another replica is dated before it, and its refund
		// returns nothing into the fresh count (refund.lua judges by
		// the Reset's mark). Both readings are whole milliseconds,
		// each rounded down, and the two clocks tick at different
		// instants, so each bound is a millisecond wider: the dating
		// one less (before, a decision made in the Reset's
		// millisecond, before it, was dated after its mark:
		// TestLeaseDecisionBeforeAResetReturnsNothing), the span's
		// end one earlier (before, a lease decided in Redis's next
		// window for up to a millisecond:
		// TestLeaseEndsBeforeRedisLeavesItsWindow). (ms
		// is the decision's instant: TIME, or the start of a window
		// ahead of TIME that take.lua decided in after a step back of
		// Redis's clock; the dating then runs ahead of TIME as that
		// decision did, and spend keeps it no earlier than first, in
		// the windows.)
		offset = ms - l.now(req) - 1
		start, end = math.MinInt64, end-(ms-tk.t)-1
	}
	// At most maxLocalAge from the request that set out for it, so that
	// a change another replica makes (a Reset, a lowered limit) is obeyed
	// here within it: tk.t is that request's time, in the store's time
	// base either way.
	end = min(end, tk.t+maxLocalAge.Milliseconds())
	sh := l.shard(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[entryKey(p, req.Key)]
	if e == nil || sh.epoch.Load() != tk.epoch {
		return // never tracked, or Reset since the script ran
	}
	var after [limiter.MaxWindows]int64
	if r.allowed {
		for i := range p.NumRates() {
			after[i] = r.counts[i] + req.Cost + r.granted
		}
	}
	switch {
	case e.known && ids == e.ids:
		// Both readings bound the same clock: a later grant may only
		// narrow the dating's margin.
		e.offset = max(e.offset, offset)
		if r.granted > 0 {
			if e.held > 0 {
				// What was held is now older than the latest grant,
				// dated by the earliest grant it may come from.
				if e.older == 0 {
					e.olderAt = e.latestAt
				}
				e.older = e.held
			}
			e.latestAt, e.spent = ms, 0
		}
		e.held += r.granted
		e.end = max(e.end, end) // a later grant, a later second
		if r.allowed {
			e.after = after
		}
	case !e.known || end > e.end:
		// A newer span: what was held in the old one has ended.
		e.start, e.end, e.ids, e.offset, e.first, e.held, e.known = start, end, ids, offset, first, r.granted, true
		e.spent, e.after, e.older, e.latestAt, e.firstAt = 0, after, 0, ms, ms
	}
	// A reply from an older span (a late one) leaves its grant stranded.
}

// refund returns to key's lease what a refund of req.Cost for d may: at
// most the units spent from the lease since its latest grant, only for a
// d decided after that grant, only while the span holds d's windows at
// the refund's time, and only while no lease request is in flight.
// Those units were charged in Redis once, at the grant: spent again from
// the lease, they are still charged once. It returns how many units it
// took back.
func (l *leases) refund(req *limiter.Request, d *limiter.Decision) int64 {
	if l == nil {
		return 0
	}
	t := l.now(req)
	ms := d.DecidedAt().UnixMilli()
	sh := l.shard(req.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.m[entryKey(req.Policy, req.Key)]
	if e == nil || !e.known || t < e.start || t >= e.end || ms <= e.latestAt || e.pending != nil {
		// d was decided before the lease's latest grant (in the grant's
		// millisecond, perhaps before too), perhaps before a Reset: this
		// replica's own, which dropped the span it was decided in, or
		// another's, which this replica cannot see. Its units are not
		// the lease's to take back: Redis judges its return by the
		// Reset's mark. What the lease takes back of a decision made
		// since is at most what it has spent since that grant, so that
		// after another replica's Reset it spends no more than it held
		// after its latest grant, within the second the grant lasts.
		// Nor while a grant is in flight: taken back now, the units
		// would sit beside it, and the lease would hold more than a cap
		// plus a request's cost less one (the most it strands, and
		// spends after another replica's Reset).
		return 0
	}
	pk := l.keys.get(req.Policy)
	for i := range req.Policy.NumRates() {
		if id, _, _ := pk.window(i, ms); id != e.ids[i] {
			return 0
		}
	}
	back := min(req.Cost, e.spent)
	e.spent -= back
	e.held += back
	// Spent from whichever grant: dated by the span's first, so that no
	// unit leased before a Reset is ever dated after it.
	e.older += back
	e.olderAt = e.firstAt
	return back
}

// forget drops key's entry under p: Reset's counts are gone from Redis,
// and so is what this replica held.
func (l *leases) forget(p *limiter.Policy, key string) {
	if l != nil {
		l.drop(p, key)
	}
}

// end drops key's entry under p, as forget does, and returns what its
// lease held unspent, for the store to give back: a settle that charged
// more than its reservation ends the lease of the replica that settled,
// whose view of the counts the charge made stale (a key it took into
// debt must not be admitted from it). A grant in flight is not recorded.
func (l *leases) end(p *limiter.Policy, key string) leftover {
	if l == nil {
		return leftover{}
	}
	sh := l.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	k := entryKey(p, key)
	var left leftover
	if e := sh.m[k]; e != nil && e.known {
		left = e.leftover()
	}
	delete(sh.m, k)
	sh.epoch.Add(1)
	return left
}

// leftover returns what the entry's lease holds unspent, each part
// dated by the grant it came from.
func (e *leaseEntry) leftover() leftover {
	if e.held <= 0 {
		return leftover{}
	}
	older := min(e.older, e.held)
	return leftover{units: e.held - older, at: e.latestAt, older: older, olderAt: e.olderAt}
}
