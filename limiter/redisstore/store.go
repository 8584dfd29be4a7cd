package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// Store is a limiter.Store kept in Redis, so that every replica of a
// service shares one limit. Each decision is one Lua script, run
// atomically by Redis over every window of the policy; see the package
// documentation for keys, clocks and failures. It is safe for concurrent
// use. The zero Store is not usable; call New.
type Store struct {
	client  redis.UniversalClient
	run     redis.Scripter // the client, or its autopipeliner
	cfg     config
	keys    keyCache
	cache   *overLimit
	breaker *gobreaker.CircuitBreaker[any]
	batch   *batcher // nil unless Batch pipelining applies

	fallback   *limiter.MemoryStore // FailLocal only
	fbPolicies sync.Map             // *limiter.Policy → its policy at limit/divisor
	fbCount    atomic.Int64         // entries in fbPolicies, at most maxCachedPolicies

	health  atomic.Uint32
	lastErr atomic.Pointer[error]
	closed  atomic.Bool
	stats   counters
}

var _ limiter.Store = (*Store)(nil)

type counters struct {
	roundTrips, decisions, cached, failures, degraded atomic.Uint64
}

// Stats counts what the store has done since New.
type Stats struct {
	// RoundTrips is the number of script calls sent to Redis (one may
	// carry several decisions under Batch pipelining).
	RoundTrips uint64
	// Decisions is the number of decisions made by Redis.
	Decisions uint64
	// Cached is the number of refusals answered by the over-limit cache,
	// with no round trip.
	Cached uint64
	// Failures is the number of decisions Redis could not make (error,
	// timeout, breaker open).
	Failures uint64
	// Degraded is the number of those answered by FailOpen or FailLocal
	// instead of an error.
	Degraded uint64
}

// New returns a store on client, which may be a single node, a failover
// (Sentinel) client or a Cluster client, built with ContextTimeoutEnabled so
// that each decision's deadline reaches the socket. The store does not own
// the client: close the client after the store.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if client == nil {
		return nil, ErrNilClient
	}
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := checkContextTimeout(client); err != nil {
		return nil, err
	}
	s := &Store{client: client, run: client, cfg: cfg, cache: newOverLimit(cfg.cacheSize)}
	s.breaker = s.newBreaker()
	// Batches mix clients' keys in one script call: only a client that
	// sends everything to one server may carry them (not a Cluster or a
	// Ring, which route a call by its first key).
	single, isSingle := client.(*redis.Client)
	switch {
	case cfg.pipelining == AutoPipeline:
		ap, err := client.AutoPipeline()
		if err != nil {
			return nil, fmt.Errorf("redisstore: autopipeline: %w", err)
		}
		s.run = ap
	case cfg.pipelining == Batch && isSingle:
		s.batch = newBatcher(s, single)
	}
	if cfg.failure == FailLocal {
		fb, err := limiter.NewMemoryStore()
		if err != nil {
			return nil, fmt.Errorf("redisstore: fallback: %w", err)
		}
		s.fallback = fb
	}
	return s, nil
}

// checkContextTimeout refuses a client whose socket reads would outlast the
// decision's deadline.
func checkContextTimeout(c redis.UniversalClient) error {
	switch c := c.(type) {
	case *redis.Client:
		if !c.Options().ContextTimeoutEnabled {
			return ErrContextTimeout
		}
	case *redis.ClusterClient:
		if !c.Options().ContextTimeoutEnabled {
			return ErrContextTimeout
		}
	}
	return nil
}

// Take decides one request: from the over-limit cache when the key is
// known to be over its limit in this window, else with one script call,
// bounded by the timeout and ctx. When Redis cannot decide, the failure
// policy answers. A refusal is a Decision, never an error.
func (s *Store) Take(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	switch {
	case s.closed.Load():
		return limiter.Decision{}, limiter.ErrClosed
	case req.Policy == nil || req.Policy.NumRates() == 0:
		return limiter.Decision{}, fmt.Errorf("%w: nil or zero Policy", limiter.ErrInvalidPolicy)
	case req.Cost <= 0:
		return limiter.Decision{}, limiter.ErrInvalidCost
	case req.Key == "":
		return limiter.Decision{}, limiter.ErrInvalidKey
	}
	if d, ok := s.cache.lookup(req.Policy, req.Key, req.Now, req.Cost); ok {
		s.stats.cached.Add(1)
		return d, nil
	}
	var (
		r   result
		err error
	)
	if s.batch != nil {
		r, err = s.batch.do(ctx, &req)
	} else {
		tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
		err = s.single(tctx, ctx, &req, &r)
		cancel()
	}
	if err == nil {
		next, d, at, derr := s.cfg.decide(&req, &r)
		if derr == nil {
			s.stats.decisions.Add(1)
			s.cache.note(req.Policy, req.Key, next, at, req.Now)
			return d, nil
		}
		err = derr
	}
	if ctx.Err() != nil {
		return limiter.Decision{}, ctx.Err()
	}
	return s.degrade(ctx, &req, err)
}

// single runs one request's script on its own.
func (s *Store) single(tctx, caller context.Context, req *limiter.Request, r *result) error {
	pk := s.keys.get(req.Policy)
	n := req.Policy.NumRates()
	keys := appendKeys(make([]string, 0, n), s.cfg.prefix, req.Key, pk, n, s.cfg.clock, req.Now.UnixMilli())
	h := s.cfg.header(1)
	args := appendArgs(append(make([]any, 0, headerArgs+requestArgs+2*n), h[:]...), req, pk)
	var (
		v   any
		err error
	)
	if s.cfg.pipelining == AutoPipeline {
		v, err = s.boundedRoundTrip(tctx, caller, keys, args)
	} else {
		v, err = s.roundTrip(tctx, caller, keys, args)
	}
	if err != nil {
		return err
	}
	var one [1]result
	if err := parseReply(v, func(int) int { return n }, one[:]); err != nil {
		return err
	}
	*r = one[0]
	return nil
}

// roundTrip runs the script once through the circuit breaker. caller is
// the context whose end means nobody waits any more.
func (s *Store) roundTrip(ctx, caller context.Context, keys []string, args []any) (any, error) {
	return s.breaker.Execute(func() (any, error) {
		s.stats.roundTrips.Add(1)
		v, err := takeScript.Run(ctx, s.run, keys, args...).Result()
		if err != nil {
			if caller.Err() != nil {
				return nil, errCallerGone{err}
			}
			s.lastErr.Store(&err)
		}
		return v, err
	})
}

// boundedRoundTrip is roundTrip for go-redis's autopipeliner, whose
// blocking face (v9.23) waits for a batch's reply past the caller's
// deadline (measured: 2s behind a 2s-delaying proxy with a 50ms timeout).
// The call runs aside and the caller stops waiting at the deadline.
func (s *Store) boundedRoundTrip(ctx, caller context.Context, keys []string, args []any) (any, error) {
	type reply struct {
		v   any
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		v, err := s.roundTrip(ctx, caller, keys, args)
		ch <- reply{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// degrade answers a request Redis could not decide, by the failure policy.
func (s *Store) degrade(ctx context.Context, req *limiter.Request, err error) (limiter.Decision, error) {
	s.stats.failures.Add(1)
	if errors.Is(err, ErrBadReply) {
		return limiter.Decision{}, err
	}
	switch s.cfg.failure {
	case FailOpen:
		s.stats.degraded.Add(1)
		_, d := limiter.Decide(req.Policy, [limiter.MaxWindows]limiter.State{}, req.Now, req.Cost)
		return d, nil
	case FailLocal:
		s.stats.degraded.Add(1)
		fr := *req
		fr.Policy = s.fallbackPolicy(req.Policy)
		return s.fallback.Take(ctx, fr)
	}
	return limiter.Decision{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// fallbackPolicy returns p with every limit divided by the divisor.
func (s *Store) fallbackPolicy(p *limiter.Policy) *limiter.Policy {
	if s.cfg.divisor == 1 {
		return p
	}
	if v, ok := s.fbPolicies.Load(p); ok {
		return v.(*limiter.Policy)
	}
	rates := p.Rates()
	for i := range rates {
		rates[i].Limit = max(1, rates[i].Limit/s.cfg.divisor)
	}
	fp, err := limiter.NewPolicy(p.Name(), rates...)
	if err != nil { // cannot happen: smaller limits of a valid policy are valid
		fp = p
	}
	if s.fbCount.Load() >= maxCachedPolicies {
		return fp
	}
	v, loaded := s.fbPolicies.LoadOrStore(p, fp)
	if !loaded {
		s.fbCount.Add(1)
	}
	return v.(*limiter.Policy)
}

// Reset forgets key's counters under p, in Redis and in the over-limit
// cache of this store. Other replicas' over-limit caches keep refusing the
// key until the window they saw full ends. Under AppClock the current
// windows are found with now, the limiter's instant, and the windows
// either side of them are deleted too, for replicas whose clocks differ.
func (s *Store) Reset(ctx context.Context, key string, p *limiter.Policy, now time.Time) error {
	switch {
	case s.closed.Load():
		return limiter.ErrClosed
	case p == nil || p.NumRates() == 0:
		return fmt.Errorf("%w: nil or zero Policy", limiter.ErrInvalidPolicy)
	case key == "":
		return limiter.ErrInvalidKey
	}
	s.cache.forget(p, key)
	pk := s.keys.get(p)
	n := p.NumRates()
	var keys []string
	if s.cfg.clock == ServerClock {
		keys = appendKeys(nil, s.cfg.prefix, key, pk, n, ServerClock, 0)
	} else {
		ms := now.UnixMilli()
		for i := range n {
			for _, d := range []int64{-1, 0, 1} {
				one := appendKeys(nil, s.cfg.prefix, key, pk, i+1, AppClock, ms+d*pk.wms[i])
				keys = append(keys, one[i])
			}
		}
	}
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	if err := s.client.Del(tctx, keys...).Err(); err != nil {
		return fmt.Errorf("redisstore: reset: %w", err)
	}
	if s.fallback != nil {
		return s.fallback.Reset(ctx, key, s.fallbackPolicy(p), now)
	}
	return nil
}

// Health reports the breaker's view of Redis.
func (s *Store) Health() Health { return Health(s.health.Load()) }

// Stats returns the store's counters.
func (s *Store) Stats() Stats {
	return Stats{
		RoundTrips: s.stats.roundTrips.Load(),
		Decisions:  s.stats.decisions.Load(),
		Cached:     s.stats.cached.Load(),
		Failures:   s.stats.failures.Load(),
		Degraded:   s.stats.degraded.Load(),
	}
}

// CachedKeys returns how many keys the over-limit cache holds.
func (s *Store) CachedKeys() int { return s.cache.len() }

// Close stops the store: later calls return limiter.ErrClosed. It waits
// for batches in flight (each bounded by the timeout) and closes the
// fallback store; the client is left to its owner. Close is idempotent.
func (s *Store) Close() error {
	s.closed.Store(true)
	if s.batch != nil {
		s.batch.close()
	}
	if s.fallback != nil {
		return s.fallback.Close()
	}
	return nil
}
