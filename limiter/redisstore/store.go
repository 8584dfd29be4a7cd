package redisstore

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/keyhash"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// Store is a limiter.Store kept in Redis, so that every replica of a
// service shares one limit. Each decision is one Lua script, run
// atomically by Redis over every window of the policy; see the package
// documentation for keys, clocks and failures. It is safe for concurrent
// use. The zero Store is not usable; call New.
type Store struct {
	client redis.UniversalClient
	cfg    config
	keys   keyCache
	cache  *overLimit
	path   path
	batch  *batcher
	leases *leases // nil unless WithLeases
	// In-flight slots (inflight.go): their rounds, the slots held and
	// renewed, this store's token prefix and counter (which settles'
	// markers share).
	slotBatch *batcher
	held      heldSlots
	id        string
	tokens    atomic.Uint64
	// settleBatch carries settles (settle.go) in rounds of their own.
	settleBatch *batcher
	// dests holds a dest per server (or routing client) decisions have
	// gone to, keyed by its client: each with its own breaker.
	dests sync.Map
	// declared: every call declares its keys, one client key per call
	// (declared.go).
	declared atomic.Bool
	// skew is Redis's clock less this replica's, in ms, as the last
	// reply that moved it by more than skewSlack said (serverClock): the
	// calendar windows a call sends are around the replica's clock plus
	// skew, so a replica whose clock is any distance off decides in
	// Redis's window after one call off the clock.
	skew atomic.Int64

	fallback   *limiter.MemoryStore        // WithFailLocal only
	hasher     *keyhash.Hasher             // WithKeyHash only
	fbPolicies policyMemo[*limiter.Policy] // each policy at limit/divisor

	// replyHook, when set by a test, runs between a decision's round trip
	// and its note in the over-limit cache.
	replyHook func()

	closed atomic.Bool
	stats  counters
	// checks runs the memory policy check New starts; stop ends it.
	checks sync.WaitGroup
	stop   context.CancelFunc
}

var _ limiter.Store = (*Store)(nil)

type counters struct {
	roundTrips, decisions, cached, failures, degraded atomic.Uint64
	leased, resent, givenBack                         atomic.Uint64
	renewals, renewFailures, slotsLost                atomic.Uint64
}

// Stats counts what the store has done since New.
type Stats struct {
	// RoundTrips is the number of script calls sent to Redis (one call
	// carries the decisions of a round for one server: the single node, a
	// Cluster master, a Ring shard; for one client key when every key is
	// declared, see WithDeclaredKeys).
	RoundTrips uint64
	// Decisions is the number of decisions made by Redis.
	Decisions uint64
	// Cached is the number of refusals answered by the over-limit cache,
	// with no round trip.
	Cached uint64
	// Failures is the number of decisions Redis could not make (error,
	// timeout, breaker open).
	Failures uint64
	// Degraded is the number of those answered by WithFailOpen or WithFailLocal
	// instead of an error.
	Degraded uint64
	// Leased is the number of decisions answered from a lease held by
	// this replica (WithLeases), with no round trip.
	Leased uint64
	// GivenBack counts the units leases held unspent when they ended, a
	// second after their grant, that were given back to their windows
	// in Redis.
	GivenBack uint64
	// Resent is the number of decisions that a Cluster client's call to
	// one master found off that master (their slot had moved, as when a
	// Cluster is resharded), charged nothing there and sent again to where
	// the slot lives, and of those whose call a server refused for the
	// keys it declared (see KeysDeclared), sent again a call per key.
	Resent uint64
	// CachedKeys is how many keys the over-limit cache holds now.
	CachedKeys int
	// SlotsHeld is how many in-flight slots (limiter.InFlight) this
	// store holds in Redis now, and renews.
	SlotsHeld int
	// Renewals counts the renewals of held slots that succeeded, and
	// RenewFailures those that failed (tried again, within the lease).
	Renewals, RenewFailures uint64
	// SlotsLost counts held slots that a renewal found gone from Redis
	// (their lease ran out while Redis was away for most of it, or Redis
	// restarted without its data) with their place taken by another
	// holder: their requests ran on without a slot, so the cap was
	// exceeded by as many while they did.
	SlotsLost uint64
}

// New returns a store on client, which may be a single node, a failover
// (Sentinel) client, a Cluster client or a Ring, built with
// ContextTimeoutEnabled so that each decision's deadline reaches the
// socket; New returns an error wrapping ErrInvalidOption otherwise. The client's retries
// and redirects may stay as they are: the store sends its script calls
// as commands go-redis never sends twice (see the package documentation).
// The store does not own the client: close the client after the store.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, errNilClient
	}
	cfg := defaults()
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkContextTimeout(client); err != nil {
		return nil, err
	}
	hasher, err := newHasher(&cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{client: client, cfg: cfg, hasher: hasher}
	s.cache = newOverLimit(cfg.cacheSize, cfg.clock == serverClock, &s.keys)
	s.leases = newLeases(cfg.lease, defaultLeaseKeys, cfg.clock == serverClock, &s.keys)
	s.path = cfg.path
	if s.path == pathByClient {
		s.path = pathFor(client)
	}
	r := s.newRouter()
	size, inFlight, pool := cfg.batchSize, cfg.batchInFlight, poolSize(client)
	if pool <= 0 {
		pool = maxRoundsUnknownPool
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		if s.path == pathPlain {
			break
		}
		// A round runs a call on every master it touches, in parallel,
		// and holds one connection per server. Two rounds keep the
		// masters busiest (three masters, 64 callers, decisions/s: 1
		// round 83k, 2 rounds 88k, 4 rounds 77k), as on a Ring (2 rounds
		// 88.6k, 4 rounds 73.4k); on one node two made as many
		// decisions/s as four at less server CPU per decision
		// (docs/performance.md).
		pool = perNodePool(c.Options().PoolSize)
	case *redis.Ring:
		if s.path == pathPlain {
			break
		}
		pool = perNodePool(c.Options().PoolSize)
	}
	if s.path == pathPlain { // rounds of one, as many as the pools hold
		size, inFlight = 1, max(pool, 1)
	}
	if cfg.acksSet && s.path == pathPlain {
		return nil, fmt.Errorf("%w: WithReplicaAcks: the client (%T) routes each call itself, and WAIT must follow a call on its connection: "+
			"give a *redis.Client, a failover client, a *redis.ClusterClient or a *redis.Ring", ErrInvalidOption, client)
	}
	s.declared.Store(cfg.declared || readsReplicas(client))
	s.batch = newBatcher(s, takeScript{s}, r, size, inFlight, pool)
	s.slotBatch = newBatcher(s, slotScript{}, r, size, inFlight, pool)
	s.settleBatch = newBatcher(s, settleScript{s}, r, size, inFlight, pool)
	if c, ok := client.(*redis.Client); ok && s.path == pathBatch {
		// One pool, which every batcher shares: see batcher.conns.
		conns := func() int { return int(c.PoolStats().TotalConns) }
		s.batch.conns, s.slotBatch.conns, s.settleBatch.conns = conns, conns, conns
	}
	s.id = newStoreID()
	s.held.init(s)
	s.checkMemoryPolicy()
	if cfg.failure == failLocal {
		fb, err := limiter.NewMemoryStore()
		if err != nil {
			return nil, fmt.Errorf("redisstore: fallback: %w", err)
		}
		s.fallback = fb
	}
	return s, nil
}

// poolSize returns how many connections client's pools hold in all,
// which bounds the rounds in flight on one node and on the Plain path
// (the path of a client New does not know, and the reference path the
// tests force on the others): a *redis.Client's pool, or a Ring's pool
// per shard (RingOptions.PoolSize, or go-redis's default of 10 per
// GOMAXPROCS) times its shards at New; 0 for other clients.
func poolSize(client redis.UniversalClient) int {
	switch c := client.(type) {
	case *redis.Client:
		return c.Options().PoolSize // defaulted by redis.NewClient
	case *redis.Ring:
		o := c.Options()
		return perNodePool(o.PoolSize) * len(o.Addrs)
	}
	return 0
}

// memoryCheckTimeout bounds the memory policy check New starts.
const memoryCheckTimeout = 2 * time.Second

// checkMemoryPolicy reports a risky maxmemory setting to the observer,
// asking the servers in the background (New does no I/O of its own); a
// server that does not answer or refuses CONFIG is not reported.
func (s *Store) checkMemoryPolicy() {
	ctx, cancel := context.WithTimeout(context.Background(), memoryCheckTimeout)
	s.stop = cancel
	if s.cfg.observer == nil {
		return
	}
	s.checks.Add(1)
	go func() {
		defer s.checks.Done()
		if risk, _ := memoryPolicyRisk(ctx, s.client); risk != "" {
			s.cfg.observer(Event{Kind: RiskyMemoryPolicy,
				Err: errors.New("redisstore: " + risk)})
		}
	}()
}

// perNodePool returns the connections of one server's pool, set as n in
// a Cluster's or Ring's options (go-redis's default when n is 0).
func perNodePool(n int) int {
	if n <= 0 {
		return 10 * runtime.GOMAXPROCS(0) // as redis.Options does
	}
	return n
}

// checkContextTimeout refuses a client whose socket reads would outlast the
// decision's deadline.
func checkContextTimeout(c redis.UniversalClient) error {
	switch c := c.(type) {
	case *redis.Client:
		if !c.Options().ContextTimeoutEnabled {
			return errContextTimeout
		}
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return errContextTimeout
		}
	case *redis.Ring:
		if !c.Options().ContextTimeoutEnabled {
			return errContextTimeout
		}
	}
	return nil
}

// check reports what no store should be asked, for Take and Refund.
func (s *Store) check(req *limiter.Request) error {
	switch {
	case s.closed.Load():
		return limiter.ErrClosed
	case req.Policy == nil || req.Policy.NumRates() == 0:
		return fmt.Errorf("%w: nil or zero Policy", limiter.ErrInvalidPolicy)
	case req.Cost <= 0:
		return limiter.ErrInvalidCost
	case req.Key == "":
		return limiter.ErrInvalidKey
	}
	req.Key = s.clientKey(req.Key)
	return nil
}

// Take decides one request: from this replica's lease for the key when it
// holds one (WithLeases), else from the over-limit cache when the key is
// known to be over its limit in this window, else in a script call shared
// with the decisions queued beside it, all bounded by one timeout and ctx.
// When Redis cannot decide, Take returns an error wrapping ErrUnavailable,
// or WithFailOpen's or WithFailLocal's answer. A refusal is a
// Decision, never an error.
//
// A decision that timed out, or whose ctx ended, may still have been
// charged: its script may have reached Redis and run, and only the reply
// been given up on. It is charged at most once: go-redis never sends a
// script call twice.
func (s *Store) Take(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	if err := s.check(&req); err != nil {
		return limiter.Decision{}, err
	}
	// One deadline for the whole decision, waiting for a lease included.
	// A lease in hand decides first, even when the over-limit cache knows
	// the window full (this replica's own lease may have filled it).
	deadline := time.Now().Add(s.cfg.timeout)
	d, tk, ok, err := s.leases.take(ctx, &req, deadline)
	if tk.left.units > 0 || tk.left.older > 0 {
		s.giveBack(ctx, &req, tk.left, deadline)
	}
	if ok {
		s.stats.leased.Add(1)
		return d, nil
	} else if err != nil {
		if cerr := ended(ctx); cerr != nil {
			return limiter.Decision{}, cerr
		}
		return s.degrade(ctx, &req, err)
	}
	// A peek (Limiter.Peek, Limiter.Usage) reads Redis: the cache may
	// be a second behind what other replicas did.
	if d, ok := s.cache.lookupUnlessPeek(&req); ok {
		s.leases.settle(&tk, &req, nil, time.Time{}, false)
		s.stats.cached.Add(1)
		return d, nil
	}
	epoch := s.cache.epochOf(req.Key)
	r, err := s.batch.do(ctx, &req, tk.want, deadline, tk.waited)
	if err == nil && s.cfg.clock == serverClock && s.learnSkew(req.Now, &r) && r.offClock {
		// The calendar windows sent missed Redis's TIME, by a window or
		// more: this replica's clock is off by as much (a machine whose
		// clock reset), and now it knows by how much. Once more, around
		// TIME: a request off the clock charged nothing, so it is
		// charged once.
		r, err = s.batch.do(ctx, &req, tk.want, deadline, true)
	}
	if s.replyHook != nil {
		s.replyHook()
	}
	if err == nil && r.offClock {
		err = clockSkew(req.Now, r)
	}
	if err == nil {
		next, d, at, derr := s.cfg.decide(&req, &r, &s.keys)
		if derr == nil {
			s.leases.settle(&tk, &req, &r, at, true)
			for i := range req.Policy.NumRates() {
				next[i].Count += r.granted // what this replica now holds is charged too
			}
			s.stats.decisions.Add(1)
			s.reportCorrupt(&req, &r)
			s.cache.note(req.Policy, req.Key, next, at, req.Now, epoch)
			return d, nil
		}
		err = derr
	}
	s.leases.settle(&tk, &req, nil, time.Time{}, false)
	if cerr := ended(ctx); cerr != nil {
		return limiter.Decision{}, cerr
	}
	if errors.Is(err, limiter.ErrClosed) {
		// Close raced this decision: the store's answer, never an outage
		// for WithFailOpen to admit or WithFailLocal to decide.
		return limiter.Decision{}, err
	}
	return s.degrade(ctx, &req, err)
}

// skewSlack is how far Redis's clock less this replica's may move before
// the store records it (learnSkew): the estimate only picks the calendar
// windows a call sends, each a day at least, and a reply's TIME is late by
// the time the request queued, so a store per reply would be noise and a
// write on a shared line per decision.
const skewSlack = time.Second

// learnSkew records Redis's clock less this replica's from r, the reply
// to a request made at now, when it moved by more than skewSlack since
// last recorded, and reports whether it did.
func (s *Store) learnSkew(now time.Time, r *result) bool {
	d := r.sec*1000 + r.usec/1000 - now.UnixMilli()
	if old := s.skew.Load(); d-old <= skewSlack.Milliseconds() && old-d <= skewSlack.Milliseconds() {
		return false
	}
	s.skew.Store(d)
	return true
}

// timeLeft returns the time left before ctx's deadline.
func timeLeft(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return time.Duration(1<<63 - 1)
	}
	return time.Until(dl)
}

// queued marks err, a round trip that started with left of its deadline,
// as the client's queue's fault rather than Redis's when it ran out of
// time having been given less than half the store's timeout: the rest was
// spent queued in the client (its pool, the batch queue) under load, which must not open the circuit.
func (s *Store) queued(left time.Duration, err error) error {
	if left < s.cfg.timeout/2 && errors.Is(err, context.DeadlineExceeded) {
		return errQueued{err}
	}
	return err
}

// ended returns ctx's error, or DeadlineExceeded once its deadline has
// passed: a socket read bounded by the deadline fails with a timeout of
// its own a moment before the context's timer fires.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	return nil
}

// deadlineErr makes err, a failed round trip on ctx, wrap
// DeadlineExceeded when ctx's deadline has passed, whether the client
// reported the context's error or its socket's timeout.
func deadlineErr(ctx context.Context, err error) error {
	if errors.Is(err, context.DeadlineExceeded) || ended(ctx) == nil {
		return err
	}
	return fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
}

// maxTryAgain bounds how many times a script answered TRYAGAIN is sent
// again, as go-redis's default MaxRedirects bounds its own retries.
const maxTryAgain = 3

// pause waits for d, or until ctx ends; it reports whether d passed.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// degrade answers a request Redis could not decide, by the failure policy.
func (s *Store) degrade(ctx context.Context, req *limiter.Request, err error) (limiter.Decision, error) {
	s.stats.failures.Add(1)
	if errors.Is(err, ErrBadReply) {
		return limiter.Decision{}, err
	}
	switch s.cfg.failure {
	case failOpen:
		s.stats.degraded.Add(1)
		_, d := limiter.Decide(req.Policy, [limiter.MaxWindows]limiter.State{}, req.Now, req.Cost)
		return limiter.Uncharged(d), nil
	case failLocal:
		s.stats.degraded.Add(1)
		fr := *req
		fr.Policy = s.fallbackPolicy(req.Policy)
		return s.fallback.Take(ctx, fr)
	}
	return limiter.Decision{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// fallbackPolicy returns p with every limit divided by the divisor.
//
// It is a policy of its own even when the divisor is 1 (the same id, so
// the same counts), so that a decision it made is told from Redis's by
// its Policy: Refund returns such a charge to the fallback.
func (s *Store) fallbackPolicy(p *limiter.Policy) *limiter.Policy {
	return s.fbPolicies.get(p, func(p *limiter.Policy) *limiter.Policy {
		rates := make([]limiter.Rate, p.NumRates())
		for i := range rates {
			rates[i] = p.Rate(i)
			rates[i].Limit = max(1, rates[i].Limit/s.cfg.divisor)
		}
		fp, err := limiter.NewPolicy(p.Name(), rates...)
		if err != nil { // cannot happen: smaller limits of a valid policy are valid
			return p
		}
		return fp
	})
}

// Reset forgets key's counters under p's name and windows, whatever its
// limits, in Redis and in the over-limit cache and leases of this store:
// once it returns, this store admits the key's next request, even if a
// decision that started before Reset answers after it. Every other
// replica obeys it within one second: what a replica keeps locally (its
// over-limit cache, its leases) is at most a second old when it decides
// by it. The Reset starts exactly one fresh budget: a return of a charge
// decided before it (a refund, a settle below its reservation, the
// units a lease held unspent) returns nothing into the fresh counts (see
// reset.lua). A replica's lease granted before it may still admit what
// it holds for that second: units the Reset erased, never counted again.
// On the limiter's clock (the default) the
// current windows are found with now, its instant, and the windows either
// side of them are deleted too, for replicas whose clocks differ.
//
// The reset (reset.lua) is sent once, never again after a network error,
// as every script call is: run twice, it would forget what other
// replicas charged between the two runs. So an error, like a decision's, does not say
// whether Redis forgot the counts: a caller that must know resets again.
func (s *Store) Reset(ctx context.Context, key string, p *limiter.Policy, now time.Time) error {
	switch {
	case s.closed.Load():
		return limiter.ErrClosed
	case p == nil || p.NumRates() == 0:
		return fmt.Errorf("%w: nil or zero Policy", limiter.ErrInvalidPolicy)
	case key == "":
		return limiter.ErrInvalidKey
	}
	key = s.clientKey(key)
	s.cache.forget(p, key)
	s.leases.forget(p, key)
	pk := s.keys.get(p)
	n := p.NumRates()
	var keys []string
	if s.cfg.clock == serverClock {
		keys = appendKeys(nil, s.cfg.prefix, key, pk, n, serverClock, 0)
	} else {
		ms := now.UnixMilli()
		for i := range n {
			_, start, end := pk.window(i, ms)
			for _, at := range []int64{start - 1, ms, end} { // the windows before, at and after now
				one := appendKeys(nil, s.cfg.prefix, key, pk, i+1, appClock, at)
				keys = append(keys, one[i])
			}
		}
	}
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	err := s.reset(tctx, key, p, keys, now)
	// A decision whose script ran before the reset may have recorded the
	// key since the first forget, in the over-limit cache or as a lease
	// granted from the counts the reset deleted: forget again, which also
	// keeps out any decision still in flight.
	s.cache.forget(p, key)
	s.leases.forget(p, key)
	if err != nil {
		return err
	}
	if s.fallback != nil {
		return s.fallback.Reset(ctx, key, s.fallbackPolicy(p), now)
	}
	return nil
}

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		RoundTrips: s.stats.roundTrips.Load(),
		Decisions:  s.stats.decisions.Load(),
		Cached:     s.stats.cached.Load(),
		Failures:   s.stats.failures.Load(),
		Degraded:   s.stats.degraded.Load(),
		Leased:     s.stats.leased.Load(),
		GivenBack:  s.stats.givenBack.Load(),
		Resent:     s.stats.resent.Load(),
		CachedKeys: s.cache.len(),

		SlotsHeld:     int(s.held.n.Load()),
		Renewals:      s.stats.renewals.Load(),
		RenewFailures: s.stats.renewFailures.Load(),
		SlotsLost:     s.stats.slotsLost.Load(),
	}
}

// Close stops the store: later calls return limiter.ErrClosed. It waits
// for batches in flight (each bounded by the timeout), then closes the
// fallback store: no goroutine of the store outlives Close. The client
// is left to its owner. Close is idempotent.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.stop()
	s.checks.Wait()
	s.held.close()
	if s.batch != nil {
		s.batch.close()
		s.slotBatch.close()
		s.settleBatch.close()
	}
	if s.fallback != nil {
		return s.fallback.Close()
	}
	return nil
}
