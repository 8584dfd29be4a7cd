package redisstore

import (
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// overLimit remembers keys that are over their limit. A key whose count
// has reached its limit in window W refuses every request until W ends,
// unless something lowers its count (a Reset, a refund, a settle, made by
// any replica) or raises its limit: such requests are answered here, with
// the same limiter.Decide, under the request's own limits, and never
// reach Redis. An entry is kept for at most maxLocalAge, so that what
// another replica did to the key is obeyed within it, and is kept by
// usage, not by limit: a request under a raised limit (another plan, the
// same usage) finds the counts and is decided again, admitted if they
// allow it, by Redis. An entry is the client key (shared with the
// caller's string) plus about 100 bytes, and is stale once its windows
// end or its second is out.
type overLimit struct {
	shardedMap[olEntry]
	keys *keyCache // the store's: the windows of calendar rates
}

type olEntry struct {
	states [limiter.MaxWindows]limiter.State
	until  int64 // ms, in the store's time base: when the last full window ends, or maxLocalAge after the decision
	// serverClock: Redis's time at the decision, and mono then.
	at   time.Time
	mono time.Duration
}

func newOverLimit(size int, server bool, keys *keyCache) *overLimit {
	if size == 0 {
		return nil
	}
	c := &overLimit{keys: keys}
	c.init(size, server)
	return c
}

// lookup answers a request for a key known to be over its limit. now is
// the request's instant; under serverClock it is not used: Redis's time is
// the entry's plus the monotonic time since. ok is false when the key is
// unknown, its full windows have ended, or (the clock stepped back) Decide
// would admit.
func (c *overLimit) lookup(p *limiter.Policy, key string, now time.Time, cost int64) (d limiter.Decision, ok bool) {
	if c == nil {
		return d, false
	}
	sh := c.shard(key)
	k := entryKey(p, key)
	var m time.Duration
	if c.server {
		m = c.mono()
	}
	sh.mu.Lock()
	e, found := sh.m[k]
	if found {
		now = c.instant(&e, now, m)
		if now.UnixMilli() >= e.until {
			delete(sh.m, k)
			found = false
		}
	}
	sh.mu.Unlock()
	if !found {
		return d, false
	}
	_, d = limiter.Decide(p, e.states, now, cost)
	return d, !d.Allowed
}

// lookupUnlessPeek is lookup for a request that charges: a peek asks
// Redis, whose counts may have moved since the entry was noted.
func (c *overLimit) lookupUnlessPeek(req *limiter.Request) (limiter.Decision, bool) {
	if req.Peek {
		return limiter.Decision{}, false
	}
	return c.lookup(req.Policy, req.Key, req.Now, req.Cost)
}

// instant returns the time, in e's time base, of a request at now (the
// application's clock) when the monotonic clock reads m: now itself under
// appClock, Redis's time under serverClock.
func (c *overLimit) instant(e *olEntry, now time.Time, m time.Duration) time.Time {
	if !c.server {
		return now
	}
	return e.at.Add(m - e.mono)
}

// epochOf returns the Reset epoch of key's shard, for note.
func (c *overLimit) epochOf(key string) uint64 {
	if c == nil {
		return 0
	}
	return c.shard(key).epoch.Load()
}

// note records the states after a decision made by Redis at instant at
// (Redis's time under serverClock), if some window is full and no Reset
// of the shard has happened since epoch was read. The entry lasts until
// the last full window ends, and at most maxLocalAge from the decision:
// from reqNow, the request's instant before its round trip, on the
// application's clock; from at, Redis's time when the script ran, on
// Redis's.
func (c *overLimit) note(p *limiter.Policy, key string, states [limiter.MaxWindows]limiter.State, at, reqNow time.Time, epoch uint64) {
	if c == nil {
		return
	}
	var until int64
	full := false
	for i := range p.NumRates() {
		r := p.Rate(i)
		if s := states[i]; s.Count < 0 || s.Count >= r.Limit {
			_, _, end := c.keys.get(p).window(i, at.UnixMilli())
			if !full || end > until {
				until = end
			}
			full = true
		}
	}
	if !full {
		return
	}
	since := reqNow
	if c.server {
		since = at
	}
	until = min(until, since.Add(maxLocalAge).UnixMilli())
	sh := c.shard(key)
	e := olEntry{states: states, until: until}
	var m time.Duration
	if c.server {
		m = c.mono()
		e.at, e.mono = at, m
	}
	stale := func(old olEntry) bool { return c.instant(&old, reqNow, m).UnixMilli() >= old.until }
	sh.mu.Lock()
	if sh.epoch.Load() == epoch && c.room(sh, stale) {
		sh.m[entryKey(p, key)] = e
	}
	sh.mu.Unlock()
}

// forget is drop, for a store that may have no cache.
func (c *overLimit) forget(p *limiter.Policy, key string) {
	if c != nil {
		c.drop(p, key)
	}
}

// len returns the number of entries held.
func (c *overLimit) len() int {
	if c == nil {
		return 0
	}
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}
