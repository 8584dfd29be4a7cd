package limiter

import (
	"context"
	"fmt"
	"hash/maphash"
	"math"
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/calendar"
	"github.com/fixedwindow/ratelimit/internal/window"
)

// Defaults of the in-memory store, each given in its option's doc.
const (
	defaultMaxKeys       = 1 << 21 // 2,097,152 counters
	defaultShards        = 256
	defaultSweepInterval = time.Minute
)

// smallTable is the most entries a table may hold for its slots to be
// cleared and reused when its window passes; larger tables are freed so that
// memory taken by a burst of keys goes back to the runtime.
const smallTable = 64

// MemoryStore is the embedded in-memory Store. It is safe for concurrent
// use: each decision runs under the lock of the key's shard, so no update
// is ever lost.
//
// Each shard keeps one table per window length (per period and zone for a
// calendar rate), holding the counts of the current window only, keyed by
// a 64-bit hash of (policy, key). When a window passes, its table's counts
// are dropped whole, at the next request that touches it or at the next
// sweep: no timer runs per key.
//
// Each request is judged by its own instant, so a wall clock that steps,
// by any amount either way, never locks a key out and never lends it more
// than one window's extra budget. A request whose instant is at most the
// policy's shortest window (a calendar window counting as its usual
// length: a day 24 hours, a month 28 days) before a table's start (two clock reads raced
// across a boundary, or the clock stepped back by up to that much) is
// decided and charged at the table's start, so a count is never rewound;
// such requests are charged less than one short window early. A table from
// further ahead (the clock stepped forward and was corrected, or stepped
// back by more than the shortest window) is stale: its counts are dropped
// and the current window starts.
// A sweep frees the counts of ended windows without moving any table, so
// Sweep called at a glitched instant costs at most the counts of the
// windows then current, and the background sweep, which reads no clock
// (below), frees a table a glitched request moved at most one window
// early.
//
// The store keeps no clock of its own: the instants it decides at are the
// requests' (Request.Now, the limiter's clock). The background sweep frees
// a table once its window has ended by the instant that last placed the
// table in its window, plus the real time elapsed since on the monotonic
// clock. So a store shared by limiters sweeps by their requests, and a
// request that reads a glitched clock misleads the sweep about the tables
// it moved, no others: their counts are freed at most one window early.
// But the sweep runs on real time, not on the limiter's clock: under a
// fake clock that stands still it would free a window the clock is still
// in, admitting again a key whose budget the test had spent. So New makes
// a limiter given a clock (WithClock) a store with no background
// sweep, and a store made for a fake clock should be made with
// WithSweepInterval(0). Without the sweep, tables are freed by the
// requests that touch them, and by Sweep at an instant of the caller's.
//
// Memory is bounded by WithMaxKeys counters (a layered policy uses one
// counter per window), enforced per shard as MaxKeys/Shards; the shard count is
// lowered if need be so that each shard holds at least MaxWindows. Keys
// spread unevenly over shards, so the first shard fills a little before
// the store does: with the defaults, when about 97% of MaxKeys are held.
// When a shard is full, a counter of a past window is freed if there is
// one; otherwise a current counter is evicted, which gives that client a
// fresh budget for the rest of the window. So the one evicted is the
// cheapest to forget of those sampled: the least spent for its limit (see
// makeRoom). A flood of fresh keys exists to evict spent counters, and
// its own are the least spent, so it evicts those and the clients at
// their limit stay there: of 500 clients at their limit of 3, a flood of
// 8,192 fresh keys through a bound of 4,096 readmitted none in 10 runs,
// where an arbitrary eviction readmitted 330 to 369 (go test -run
// TestMemoryStoreFloodKeepsSpentBudgets -v -count 10 ./limiter/; more
// in docs/memory-store.md). A flood whose keys each spend their budget is
// as spent as the clients and still evicts them. Evictions are counted
// (see Stats): a store that evicts is too small for its traffic, or
// is being flooded.
//
// Keys are hashed with a per-store random seed, so a counter is a 16-byte
// slot of an open-addressing table (18 to 37 bytes of heap at its load
// factors) whatever the key's length: the hash, and the count packed with
// how spent it is. Two keys share a counter only if their 64-bit hashes
// collide (about 1 in 2^64 per pair, and not steerable by clients, who
// cannot know the seed).
//
// The zero MemoryStore is not usable; call NewMemoryStore.
type MemoryStore struct {
	seed      maphash.Seed
	shards    []memShard
	mask      uint64
	perShard  int
	mono      func() time.Duration // the monotonic clock of the tables' deadlines; a test may set it
	evictions atomic.Uint64
	slots     slotTable // in-flight slots (memory_slots.go), made on first use
	closed    atomic.Bool
	closeOnce sync.Once
	stop      chan struct{}
	done      chan struct{}
}

type memShard struct {
	mu     sync.Mutex
	n      int         // counters held, over all tables
	first  memTable    // the first window length seen, inline: read on the lock's cache lines
	tables []*memTable // every table, first included once used
	// byKey finds the tables by key once there are more than
	// tableScan: a policy counted in each customer's zone has a table
	// per zone and window (the tz database has about 600 zones).
	byKey map[int64]*memTable
	// No table that holds a counter is stale (see makeRoom) at an
	// instant in [liveFrom, liveTo): bounds kept at every insertion,
	// loose after the frees in between, made tight again by makeRoom,
	// which looks through the tables only outside them.
	liveFrom, liveTo int64
	// resets are the windows Reset cleared (resetmark.go), read by
	// returns alone, on a line of their own.
	resets map[resetKey]resetMark
	_      [32]byte // to a multiple of 64 bytes (TestMemShardSize)
}

// tableScan is how many tables a shard looks through in order before it
// indexes them by key: a scan of a few is quicker than a map's hash.
const tableScan = 8

type memTable struct {
	windowMs int64 // the windows' length, or for a calendar rate's, the span's key (negative)
	id       int64 // the window whose counts are held
	start    int64 // its start, Unix ms
	end      int64 // its end: the table is stale from then on
	counts   counts
	cal      *calendar.Cache // a calendar rate's windows, else nil
	// deadline is when the window ends on the store's monotonic clock
	// (mono), in nanoseconds: the request that placed the table in its
	// window said how far off the end was. The background
	// sweep reads it, so that it needs no clock of its own. It comes
	// last so that the fields every request reads keep their places on
	// the shard's first cache line.
	deadline int64
}

// A MemoryOption configures NewMemoryStore, as an Option does New: it
// records its argument, and NewMemoryStore checks them all, once.
type MemoryOption func(*memoryConfig)

type memoryConfig struct {
	maxKeys, shards int
	sweep           time.Duration
	mono            func() time.Duration // nil: time since the store was made
}

// WithMaxKeys bounds the counters held (at least MaxWindows; default
// 2,097,152, 2^21).
func WithMaxKeys(n int) MemoryOption { return func(c *memoryConfig) { c.maxKeys = n } }

// WithShards sets the number of lock shards, 1 to 65536, rounded up to a
// power of two (default 256).
func WithShards(n int) MemoryOption { return func(c *memoryConfig) { c.shards = n } }

// WithSweepInterval sets how often a background sweep frees the tables of
// past windows that no request has touched (default 1m).
// Zero disables the sweep; tables are then freed only when touched, or by
// Sweep. The sweep times windows on the monotonic clock from the instants
// requests carried, so it runs on real time: disable it for a store under
// a fake clock (see MemoryStore).
func WithSweepInterval(d time.Duration) MemoryOption { return func(c *memoryConfig) { c.sweep = d } }

// withMono makes the store read its monotonic clock from mono instead of
// the time since it was made, so that a test moves the background sweep's
// time instead of waiting for it. The sweep reads mono concurrently with
// requests.
func withMono(mono func() time.Duration) MemoryOption {
	return func(c *memoryConfig) { c.mono = mono }
}

// NewMemoryStore returns an in-memory store. Close it to stop its sweep.
func NewMemoryStore(opts ...MemoryOption) (*MemoryStore, error) {
	cfg := memoryConfig{maxKeys: defaultMaxKeys, shards: defaultShards, sweep: defaultSweepInterval}
	for i, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: memory store: nil MemoryOption %d", ErrInvalidOption, i)
		}
		o(&cfg)
	}
	switch {
	case cfg.shards <= 0 || cfg.shards > 1<<16:
		return nil, fmt.Errorf("%w: memory store: shards %d must be in [1, 65536]", ErrInvalidOption, cfg.shards)
	case cfg.maxKeys < MaxWindows:
		return nil, fmt.Errorf("%w: memory store: max keys %d must be ≥ %d (one key of a layered policy holds up to %d counters)",
			ErrInvalidOption, cfg.maxKeys, MaxWindows, MaxWindows)
	case cfg.sweep < 0:
		return nil, fmt.Errorf("%w: memory store: sweep interval %v must be ≥ 0", ErrInvalidOption, cfg.sweep)
	}
	// Every shard must hold at least MaxWindows counters, so that a full
	// shard always has a counter of another key to evict.
	n := 1 << bits.Len(uint(cfg.shards-1))
	if limit := cfg.maxKeys / MaxWindows; n > limit {
		n = 1 << (bits.Len(uint(limit)) - 1)
	}
	s := &MemoryStore{
		seed:     maphash.MakeSeed(),
		shards:   make([]memShard, n),
		mask:     uint64(n - 1),
		perShard: cfg.maxKeys / n,
		mono:     cfg.mono,
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	if s.mono == nil {
		born := time.Now()
		s.mono = func() time.Duration { return time.Since(born) }
	}
	if cfg.sweep > 0 {
		go s.sweepLoop(cfg.sweep)
	} else {
		close(s.done)
	}
	return s, nil
}

var _ Store = (*MemoryStore)(nil)

func (s *MemoryStore) hash(key string, p *Policy) uint64 {
	return maphash.String(s.seed, key) ^ p.tag
}

// Take applies one decision atomically. See Store.
func (s *MemoryStore) Take(ctx context.Context, req Request) (d Decision, err error) {
	if s.closed.Load() {
		return Decision{}, ErrClosed
	}
	if err := req.check(); err != nil {
		return Decision{}, err
	}
	p := req.Policy
	h := s.hash(req.Key, p)
	sh := &s.shards[h&s.mask]
	var (
		state [MaxWindows]State
		found [MaxWindows]bool
		slots [MaxWindows]int
		tabs  [MaxWindows]*memTable
	)
	sh.mu.Lock()
	now := sh.prepare(p, req.Now, &tabs, s.mono)
	for i := range p.rates {
		t := tabs[i]
		var c int64
		slots[i], c, found[i] = t.counts.lookup(h)
		state[i] = State{Window: t.id, Count: countOf(c)}
	}
	decide(p, &state, now, req.Cost, &state, &d)
	if d.Allowed && !req.Peek {
		// Updates first, through the slots found above; insertions after,
		// since making room may move other entries.
		inserts := false
		for i := range p.rates {
			if found[i] {
				tabs[i].counts.slots[slots[i]].c = packCount(state[i].Count, p.spans[i])
			} else {
				inserts = true
			}
		}
		if inserts {
			for i := range p.rates {
				if !found[i] {
					if sh.n >= s.perShard {
						s.makeRoom(sh, h, now.UnixMilli())
					}
					tabs[i].counts.set(h, packCount(state[i].Count, p.spans[i]))
					sh.n++
					sh.holds(tabs[i])
				}
			}
		}
	}
	sh.mu.Unlock()
	return d, nil
}

// prepare finds (or makes) the table of each of p's windows and brings it
// to the window of the instant to decide at, which it returns.
//
// A table normally holds the window of now, or a past one, which is
// dropped. A table whose window starts after now, by at most the policy's
// shortest window, is what a racing clock read leaves near a boundary
// (another request read a later instant and took the lock first; such
// reads differ by microseconds) or a step back of at most that much: the
// request is decided at that table's start, so the new window's counts
// are never rewound. A table further ahead can only come from a clock that
// was wrong (stepped forward and since corrected, or now stepped back by
// more than the shortest window): its counts are stale and dropped. The
// bound is the shortest window, not the table's own: a step back of 30s
// across a minute's start must not decide every request of the next 30s
// at that start, in one second of a per-second window, which would lock
// the key out. So no glitch refuses a key for longer than one window of
// the policy's shortest length. The windows of a layered policy are all
// decided at one instant, the latest start among the tables ahead within
// that bound (now if none), and every other table not in its window there
// is dropped and moved to it. For a policy of one window the bound is one
// window ahead, as it always was. A table made or moved here takes its
// deadline for the background sweep from that instant and mono, the
// store's monotonic clock; only then is mono read.
func (sh *memShard) prepare(p *Policy, now time.Time, tabs *[MaxWindows]*memTable, mono func() time.Duration) time.Time {
	ms := now.UnixMilli()
	if ms > msBound || ms < -msBound {
		ms = max(min(ms, msBound), -msBound) // as Decide does: no window arithmetic can overflow
		now = time.UnixMilli(ms)
	}
	current := true
	for i := range p.rates {
		t := sh.table(&p.spans[i], ms, mono)
		tabs[i] = t
		current = current && ms >= t.start && ms < t.end
	}
	if current {
		return now
	}
	shortest := p.spans[0].ms
	for _, sp := range p.spans[1:] {
		shortest = min(shortest, sp.ms)
	}
	latest := ms
	for i := range p.rates {
		if t := tabs[i]; ms < t.start && t.start-ms <= shortest {
			latest = max(latest, t.start)
		}
	}
	m := int64(mono())
	for i := range p.rates {
		if t := tabs[i]; latest < t.start || latest >= t.end {
			sh.drop(t, latest, m)
		}
	}
	sh.sweep(latest)
	if latest != ms {
		now = time.UnixMilli(latest)
	}
	return now
}

// table returns the shard's table for the windows of sp, making one in
// the window of ms if there is none. Tables are found by sp.key: a fixed
// window's length, or a calendar rate's (negative) key, so every policy
// whose windows are the same shares a table.
func (sh *memShard) table(sp *span, ms int64, mono func() time.Duration) *memTable {
	key := sp.key
	if sh.first.windowMs == key {
		return &sh.first
	}
	if sh.byKey != nil {
		if t := sh.byKey[key]; t != nil {
			return t
		}
	} else {
		for _, t := range sh.tables {
			if t.windowMs == key {
				return t
			}
		}
	}
	t := &memTable{windowMs: key, cal: sp.cal}
	if sh.first.windowMs == 0 {
		t = &sh.first
		t.windowMs, t.cal = key, sp.cal
	}
	t.place(ms, int64(mono()))
	sh.tables = append(sh.tables, t)
	switch {
	case sh.byKey != nil:
		sh.byKey[key] = t
	case len(sh.tables) > tableScan:
		sh.byKey = make(map[int64]*memTable, 2*len(sh.tables))
		for _, t := range sh.tables {
			sh.byKey[t.windowMs] = t
		}
	}
	return t
}

// drop forgets a table's counts and moves it to the window of ms, read at
// mono on the store's monotonic clock.
func (sh *memShard) drop(t *memTable, ms, mono int64) {
	sh.free(t)
	t.place(ms, mono)
}

// place puts t in the window of ms, an instant read at mono on the store's
// monotonic clock.
func (t *memTable) place(ms, mono int64) {
	if t.cal != nil {
		t.start, t.end = t.cal.Window(ms)
		t.id = t.start
	} else {
		t.id, t.start, t.end = window.ID(ms, t.windowMs)
	}
	left := t.end - ms // in (0, windowMs]: a window may last 2^53 ms, too long for nanoseconds
	if left > (math.MaxInt64-mono)/int64(time.Millisecond) {
		t.deadline = math.MaxInt64
		return
	}
	t.deadline = mono + left*int64(time.Millisecond)
}

// free forgets a table's counts, leaving its window as it is.
func (sh *memShard) free(t *memTable) {
	sh.n -= t.counts.n
	t.counts.reset()
}

// sweep frees the counts of every table whose window has ended at ms. It
// does not move the tables to ms's window: the next request does, as
// prepare judges from its own instant. So a sweep that reads a clock
// stepped forward costs at most the counts of the current windows, and
// moves no table ahead of the requests that follow.
func (sh *memShard) sweep(ms int64) {
	for _, t := range sh.tables {
		if ms >= t.end {
			sh.free(t)
		}
	}
}

// makeRoom frees one counter in a full shard, never key h's: a stale
// window's if any, else the current counter that costs least to forget,
// counted as an eviction. Stale are the windows that have ended at ms and
// those more than one window ahead of it, which the next request to reach
// them would drop (see prepare); ms is the instant being decided, whose
// own tables are neither.
//
// Forgetting a current counter hands its client back what it has spent,
// so the cheapest is the least spent for its limit, then the one with the
// fewest units: the least slot value (see packCount) among evictProbes
// slots of each table read at points that h picks, as Redis samples keys
// for its LRU rather than keeping an order. A flood of fresh keys then
// evicts its own counters, spent least, and leaves the clients at their
// limit spent: one is evicted only when every counter sampled is as spent
// as its own, and spent counters are a small share of a flooded shard.
func (s *MemoryStore) makeRoom(sh *memShard, h uint64, ms int64) {
	if ms < sh.liveFrom || ms >= sh.liveTo {
		// Some table holding counters may be stale: free those, and
		// bound the rest anew.
		sh.liveFrom, sh.liveTo = math.MinInt64, math.MaxInt64
		for _, t := range sh.tables {
			switch {
			case t.stale(ms):
				sh.free(t)
			case t.counts.n > 0:
				sh.holds(t)
			}
		}
	}
	if sh.n < s.perShard {
		return
	}
	// A shard holds at least MaxWindows counters and h has fewer than
	// that here, so some table has another key's counter. At most
	// evictTables tables that hold counters are read, from one h picks:
	// a policy counted in each customer's zone has hundreds.
	from := h * 0x9E3779B97F4A7C15 // not h's own slot, which its top bits pick
	var (
		victim *memTable
		slot   int
		least  uint64
	)
	n := len(sh.tables)
	for k, read := int(h%uint64(n)), 0; read < evictTables && k < int(h%uint64(n))+n; k++ {
		t := sh.tables[k%n]
		if t.counts.n == 0 {
			continue
		}
		read++
		if i, v, ok := t.counts.cheapest(h, from, evictProbes); ok && (victim == nil || v < least) {
			victim, slot, least = t, i, v
		}
	}
	if victim != nil {
		victim.counts.remove(slot)
		sh.n--
		s.evictions.Add(1)
	}
}

// stale reports whether t's window is one makeRoom frees at ms: ended,
// or more than one window ahead (which the next request to reach it
// would drop, see prepare).
func (t *memTable) stale(ms int64) bool {
	return ms >= t.end || ms < t.start-(t.end-t.start)
}

// holds notes that t holds a counter: no instant where it is stale is
// in the shard's live bounds.
func (sh *memShard) holds(t *memTable) {
	sh.liveFrom = max(sh.liveFrom, t.start-(t.end-t.start))
	sh.liveTo = min(sh.liveTo, t.end)
}

// evictTables is how many tables holding counters makeRoom reads for its
// victim: 8 × evictProbes slots, enough for the odds evictProbes gives,
// and a bounded cost when a shard has a table per customer's zone.
const evictTables = 8

// evictProbes is how many slots of each table makeRoom reads: at the
// tables' loads, 7/16 to 7/8, 14 to 28 counters. A client at its limit is
// evicted only if no slot read holds a counter less spent, which in a
// shard where a share f of the counters are as spent as its own happens
// with probability (1 − load·(1 − f))^32 per eviction: 9·10^-9 for 500 of
// 4,096 at a load of 1/2. Sixteen probes were not enough: a sample of
// Binomial(16, 1/2) counters is often small, and 2 to 5 of those 500
// spent clients were admitted again after a flood of 8,192 fresh keys;
// with 32, none in 10 runs.
const evictProbes = 32

// A counter's slot packs its count, in the low countBits bits, with how
// spent it is, above them: maxSpent × count / limit, rounded. Compared as
// unsigned numbers, slot values order counters by what forgetting one
// costs: the share of its budget it would get back, then the units.
// Counts fit: MaxLimit is below 2^50, and no count exceeds its limit.
const (
	countBits = 56
	countMask = 1<<countBits - 1
	maxSpent  = 1<<(64-countBits) - 1
)

// packCount returns the slot value of count, charged under the rate of sp.
func packCount(count int64, sp span) int64 {
	spent := min(uint64(float64(count)*sp.perUnit+0.5), maxSpent)
	return int64(spent<<countBits | uint64(count)&countMask)
}

// countOf returns the count a slot value holds.
func countOf(v int64) int64 { return v & countMask }

// Reset forgets key's counters under p, in whatever window they are, and
// marks its windows reset at now, so that a return of a charge decided
// at or before it (a refund, a settle below its reservation) gives
// nothing back into the fresh budget.
func (s *MemoryStore) Reset(ctx context.Context, key string, p *Policy, now time.Time) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := p.check(); err != nil {
		return err
	}
	h := s.hash(key, p)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for _, sp := range p.spans {
		for _, t := range sh.tables {
			if t.windowMs == sp.key && t.counts.del(h) {
				sh.n--
			}
		}
	}
	sh.markReset(h, p, max(min(now.UnixMilli(), msBound), -msBound))
	return nil
}

// Refund returns req.Cost to the windows d charged. See Store.
func (s *MemoryStore) Refund(ctx context.Context, req Request, d Decision) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := req.check(); err != nil {
		return err
	}
	if ok, err := Refundable(d, req.Policy); !ok {
		return err
	}
	s.refund(&req, &d)
	return nil
}

// Settle charges actual − req.Cost to the windows current at req.Now, or
// returns the difference to the windows d charged that are still
// current. See Settler.
func (s *MemoryStore) Settle(ctx context.Context, req Request, d Decision, actual int64) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if err := checkSettle(&req, actual); err != nil {
		return err
	}
	if ok, err := Refundable(d, req.Policy); !ok {
		return err
	}
	switch delta := actual - req.Cost; {
	case delta < 0:
		req.Cost = -delta
		s.refund(&req, &d)
	case delta > 0:
		s.charge(&req, delta)
	}
	return nil
}

var _ Settler = (*MemoryStore)(nil)

// charge adds cost to every window of req's policy current at req.Now,
// whatever its count: a settle is never refused.
func (s *MemoryStore) charge(req *Request, cost int64) {
	p := req.Policy
	h := s.hash(req.Key, p)
	sh := &s.shards[h&s.mask]
	var tabs [MaxWindows]*memTable
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := sh.prepare(p, req.Now, &tabs, s.mono)
	for i := range p.rates {
		t := tabs[i]
		if slot, c, found := t.counts.lookup(h); found {
			t.counts.slots[slot].c = packCount(min(countOf(c)+cost, countMask), p.spans[i])
			continue
		}
		if sh.n >= s.perShard {
			s.makeRoom(sh, h, now.UnixMilli())
		}
		t.counts.set(h, packCount(cost, p.spans[i]))
		sh.n++
		sh.holds(t)
	}
}

// refund returns req.Cost to the windows d charged that are still current
// at req.Now, never below zero.
func (s *MemoryStore) refund(req *Request, d *Decision) {
	p := req.Policy
	h := s.hash(req.Key, p)
	sh := &s.shards[h&s.mask]
	ms := max(min(req.Now.UnixMilli(), msBound), -msBound)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	for i := range p.spans {
		sp := &p.spans[i]
		id := sp.windowID(d.nowMs)
		if sp.windowID(ms) != id || sh.resetSince(h, sp, d.nowMs) {
			continue // ended, or reset since: a refund never lends to a later budget
		}
		for _, t := range sh.tables {
			if t.windowMs != sp.key || t.id != id {
				continue
			}
			if slot, c, found := t.counts.lookup(h); found {
				t.counts.slots[slot].c = packCount(max(0, countOf(c)-req.Cost), p.spans[i])
			}
		}
	}
}

// MemoryStats describes a MemoryStore's use of its bound.
type MemoryStats struct {
	// Keys is the number of counters held (one per window of a key's
	// policy).
	Keys int
	// MaxKeys is the bound on counters held: WithMaxKeys as configured,
	// rounded down to a multiple of the shard count.
	MaxKeys int
	// Evictions counts the current counters evicted to make room, each
	// one a client whose budget started again early. A store that evicts
	// is too small for its traffic, or is being flooded.
	Evictions uint64
	// SlotKeys is the number of keys holding in-flight slots (InFlight),
	// bounded by MaxKeys apart from the counters.
	SlotKeys int
}

// Stats reports the counters held, the bound and the evictions so far.
func (s *MemoryStore) Stats() MemoryStats {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.n
		sh.mu.Unlock()
	}
	return MemoryStats{Keys: n, MaxKeys: s.perShard * len(s.shards), Evictions: s.evictions.Load(), SlotKeys: s.table().keys()}
}

// Sweep frees the counters of every window that has passed by now, for
// callers that disabled the background sweep or that want it done at a
// known instant. It moves no window forward (the next request does), so a
// Sweep at a wrong instant costs at most the counts of the windows current
// then.
func (s *MemoryStore) Sweep(now time.Time) {
	ms := now.UnixMilli()
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.sweep(ms)
		sh.mu.Unlock()
	}
}

// sweepEnded is the background sweep: it frees the counts of every table
// whose deadline has passed at mono, on the store's monotonic clock.
func (s *MemoryStore) sweepEnded(mono int64) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, t := range sh.tables {
			if mono >= t.deadline {
				sh.free(t)
			}
		}
		sh.mu.Unlock()
	}
}

func (s *MemoryStore) sweepLoop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sweepEnded(int64(s.mono()))
		}
	}
}

// Close stops the sweep and waits for it to end. Later calls return
// ErrClosed from Take and Reset. Close is idempotent.
func (s *MemoryStore) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
	})
	<-s.done
	return nil
}
