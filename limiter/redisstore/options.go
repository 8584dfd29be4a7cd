package redisstore

import (
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of New, each named in its option's documentation.
const (
	defaultPrefix          = "rl:"
	defaultTimeout         = 100 * time.Millisecond
	defaultExpiryMargin    = 2 * time.Second
	defaultBreakerFailures = 5
	defaultBreakerOpen     = time.Second
	defaultCacheSize       = 1 << 14
	defaultBatchSize       = 64
	defaultBatchInFlight   = 2
	// maxBatchSize bounds withBatching's size: the script unpacks every
	// key of a call onto Lua's stack (at most 4 windows per request).
	maxBatchSize = 1024
)

// A clockSource says whose clock places a request in its window: the
// application's (the limiter's Request.Now, the default) or Redis's
// (WithServerClock).
type clockSource uint8

const (
	appClock clockSource = iota
	serverClock
)

// A failMode says what Take answers when Redis cannot decide: an error
// (the default), an admission (WithFailOpen) or the in-memory fallback's
// decision (WithFailLocal).
type failMode uint8

const (
	failClosed failMode = iota
	failOpen
	failLocal
)

// A path is how decisions reach Redis: rounds of many decisions, one
// script call per server, on the three go-redis clients (pathBatch); one
// decision per call, routed by the client, on any other UniversalClient,
// whose routing the store cannot know (pathPlain), and where tests force
// it (withPath) to cover both on one server.
type path uint8

const (
	pathByClient path = iota
	pathBatch
	pathPlain
)

// pathFor returns the path New picks for client.
func pathFor(client redis.UniversalClient) path {
	switch client.(type) {
	case *redis.Client, *redis.ClusterClient, *redis.Ring:
		return pathBatch
	}
	return pathPlain
}

// withPath forces a path, for tests. Batch applies on the three go-redis
// clients; elsewhere Plain does.
func withPath(p path) Option { return func(c *config) { c.path = p } }

// An Option configures New.
type Option func(*config)

type config struct {
	prefix          string
	clock           clockSource
	timeout         time.Duration
	margin          time.Duration
	failure         failMode
	failModes       int // WithFailOpen and WithFailLocal given, for New to check
	divisor         int64
	observer        func(Event)
	breakerFailures int
	breakerOpen     time.Duration
	cacheSize       int
	path            path
	batchSize       int
	batchInFlight   int
	declared        bool
	lease           leaseConfig
	acks            int           // WithReplicaAcks: replicas to wait for, 0 for none
	ackTimeout      time.Duration //
	acksSet         bool          // WithReplicaAcks given, for New to check
	hashSecret      []byte        // WithKeyHash's secret
	hashSet         bool          // WithKeyHash given, for New to check
}

func defaults() config {
	return config{
		prefix:          defaultPrefix,
		timeout:         defaultTimeout,
		margin:          defaultExpiryMargin,
		divisor:         1,
		breakerFailures: defaultBreakerFailures,
		breakerOpen:     defaultBreakerOpen,
		cacheSize:       defaultCacheSize,
		batchSize:       defaultBatchSize,
		batchInFlight:   defaultBatchInFlight,
	}
}

// WithPrefix sets the prefix of every key (default "rl:"). It may
// not contain '{' or '}', which would move the Cluster hash tag.
func WithPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithServerClock decides with Redis's TIME, read inside the script,
// instead of the limiter's clock (Request.Now, the default): one clock
// for every replica, so boundaries agree exactly whatever the replicas'
// clocks say. Every replica sharing a prefix must make the same choice:
// the two keep different keys.
//
// With the limiter's clock the window id is part of each Redis key, so a
// key holds one window only and no replica can ever charge a window it
// did not compute. Replicas whose clocks disagree by δ disagree about
// boundaries for δ: near a boundary a client may spend the old window's
// budget on one replica and the new one's on another, at most a second
// full budget, as in any boundary burst; within a window they share one
// count. A replica whose clock lags by more than the expiry margin may
// find an expired key and start that window again. Keep clocks
// synchronised (NTP) and the margin above their worst skew.
//
// With Redis's clock the failure mode is a Redis whose clock jumps (a
// failover to a node whose clock differs, an NTP step): a jump forward
// starts windows early; after a jump back, a window stored to start after
// TIME by at most the policy's shortest window is decided in (at its
// start; a count is never rewound), and one stored further ahead is
// stale: the current window starts afresh, with a fresh expiry. Either
// way a step of any size costs a key at most one window of wrong answers.
// The over-limit cache and the leases time their entries from Redis's
// time at the decision on the monotonic clock, so no step of the
// application's clock keeps a key refused past Redis's window.
//
// A calendar rate (a day, a week or a month in a zone) needs the zone's
// rules, which Lua does not have: each call sends, per calendar rate of a
// policy, the window the replica's own clock is in and the windows either
// side of it, and the script decides in the one that holds TIME. Replicas
// whose clocks differ, or whose machines are set to different zones, so
// still share one window. A replica whose clock is a window or more off
// Redis's (a day, for a day's rate; years, for a machine whose clock
// reset) first sends windows that do not hold TIME: that call charges
// nothing and answers TIME, and the store, now knowing how far its clock
// is off, sends the request once more around Redis's clock, and keeps
// the difference for the calls after it. So it decides in Redis's window,
// charged once, whatever its own clock says; only a decision whose second
// call misses too (TIME moved by a window between the two) fails, with
// ErrClockSkew (within ErrUnavailable, reason "clock_skew"), charging
// nothing. Windows of fixed length are named by TIME alone, in the
// script.
func WithServerClock() Option { return withClockSource(serverClock) }

// withClockSource chooses the clock, for tests that run both.
func withClockSource(s clockSource) Option { return func(c *config) { c.clock = s } }

// WithTimeout bounds each decision (default 100ms), on top of the
// request's own context, waiting for a lease included. When it passes,
// the decision is answered as when Redis cannot decide (an error, or
// WithFailOpen's or WithFailLocal's answer); the script may still have
// run in Redis and charged the request.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithExpiryMargin sets how long a window's key outlives the window's end
// (default 2s, a whole number of milliseconds): the slack
// for replicas whose clocks lag.
func WithExpiryMargin(d time.Duration) Option { return func(c *config) { c.margin = d } }

// WithFailOpen admits when Redis cannot decide (it is unreachable,
// slower than the timeout, or its server's breaker is open), instead of
// returning an error wrapping ErrUnavailable (the default, which never
// exceeds the quota and suits logins, payments, costly calls). The
// Decision is that of an empty window, charged to nothing. Suits public
// reads, where an outage of the limiter must not become an outage of the
// service. Such decisions are counted in Stats.Degraded. It excludes
// WithFailLocal. An in-flight slot (AcquireSlot) is likewise granted,
// charged to nothing: its release gives back nothing.
func WithFailOpen() Option {
	return func(c *config) { c.failure, c.failModes = failOpen, c.failModes+1 }
}

// WithFailLocal decides with an in-memory store on each replica when
// Redis cannot decide, at the policy's limits divided by divisor (at
// least 1 remains of each): N replicas → divisor N keeps the total near
// the limit; divisor must be ≥ 1. Its Decisions carry that reduced
// policy, so clients are told the limit actually applied, and a refund of
// one goes back to the fallback. Counts kept there are not forgotten when
// Redis answers again: they last until their windows end, so a Redis that
// fails again within a window finds the budget already spent locally
// there, and a flapping Redis cannot hand out a fresh local budget per
// outage. Counts kept in Redis before the outage are not seen by the
// fallback, nor its counts by Redis. Such decisions are counted in
// Stats.Degraded. It excludes WithFailOpen. An in-flight slot
// (AcquireSlot) is taken from a local cap of max/divisor (at least 1),
// and given back there.
func WithFailLocal(divisor int) Option {
	return func(c *config) {
		c.failure, c.divisor, c.failModes = failLocal, int64(divisor), c.failModes+1
	}
}

// WithObserver registers a function called on every change of health and
// on every corrupt value a decision or a slot call finds in Redis (see Event). It runs
// synchronously on the path of a decision and must not block.
func WithObserver(f func(Event)) Option { return func(c *config) { c.observer = f } }

// WithBreaker sets the circuit breakers, one per server (a single node, a
// Cluster master, a Ring shard): a server's opens after failures
// consecutive failed round trips to it (default 5), and while open no
// call reaches that server: its decisions are answered at once as when
// Redis cannot decide (an error, or WithFailOpen's or WithFailLocal's
// answer). After openFor (default 1s) one probe is let through; its
// success closes the breaker.
func WithBreaker(failures int, openFor time.Duration) Option {
	return func(c *config) { c.breakerFailures, c.breakerOpen = failures, openFor }
}

// WithOverLimitCache bounds the over-limit cache to n keys (default
// 16384); 0 disables it. A key found over its limit in a window is
// refused locally, with no round trip, for a second at most (until the
// window ends, if sooner), so that a Reset or refund another replica
// makes is obeyed here within that second; then one request asks Redis
// again. A request under a higher limit (a plan's, limiter.Limiter.For:
// the same usage) is decided again under it at once.
func WithOverLimitCache(n int) Option { return func(c *config) { c.cacheSize = n } }

// WithDeclaredKeys sends every script call with its keys declared, the
// decisions of one client key per call (its keys share a hash tag, so a
// Cluster slot), from the first decision on.
// By default the store sends one call per server for the decisions that
// queue: on a single node (or a Ring shard) declaring the keys of many
// slots, on a Cluster master as a node call declaring none, which
// open-source Redis runs; a host that refuses such a call (DragonflyDB,
// which refuses undeclared keys; a proxy that routes a script by its
// first key, or a Cluster behind one, which answers CROSSSLOT) is found
// by its refusal, and the store then declares every key by itself, after
// one refused call per server. Give it for a host that would refuse, to
// spare those calls, and for one that routes such calls without refusing
// them: a proxy that routes a call declaring no key by its first
// argument (Envoy's), or one that routes a call by its first key
// whatever the others (twemproxy), whose counts would otherwise land on
// the wrong server. It costs a call per client key instead of per server
// (docs/redis.md).
func WithDeclaredKeys() Option { return func(c *config) { c.declared = true } }

// withBatching, for tests, sizes the rounds that concurrent decisions
// share (New picks the sizes by measurement): at most
// size decisions per round (default 64, at most 1024), which makes one
// script call on a single node (or Sentinel's master) and one per master
// (per shard) on a Cluster (a Ring), and inFlight rounds at once (default
// 2), twice as many while a whole round's worth is queued. More rounds
// start, up to the connections of the pool, when a burst on a slow link
// would otherwise wait past the timeout.
func withBatching(size, inFlight int) Option {
	return func(c *config) { c.batchSize, c.batchInFlight = size, inFlight }
}

func (c *config) validate() error {
	switch {
	case strings.ContainsAny(c.prefix, "{}"):
		return fmt.Errorf("%w: prefix %q contains '{' or '}'", ErrInvalidOption, c.prefix)
	case c.clock > serverClock:
		return fmt.Errorf("%w: clock source %d", ErrInvalidOption, c.clock)
	case c.timeout <= 0:
		return fmt.Errorf("%w: timeout %v must be > 0", ErrInvalidOption, c.timeout)
	case c.margin < 0 || c.margin%time.Millisecond != 0:
		return fmt.Errorf("%w: expiry margin %v must be a whole number of milliseconds ≥ 0", ErrInvalidOption, c.margin)
	case c.failModes > 1:
		return fmt.Errorf("%w: WithFailOpen and WithFailLocal exclude each other, and each may be given once", ErrInvalidOption)
	case c.divisor < 1:
		return fmt.Errorf("%w: WithFailLocal(%d): the divisor must be ≥ 1", ErrInvalidOption, c.divisor)
	case c.breakerFailures < 1 || c.breakerOpen <= 0:
		return fmt.Errorf("%w: breaker needs failures ≥ 1 and an open time > 0, got %d and %v",
			ErrInvalidOption, c.breakerFailures, c.breakerOpen)
	case c.cacheSize < 0:
		return fmt.Errorf("%w: over-limit cache size %d must be ≥ 0", ErrInvalidOption, c.cacheSize)
	case c.path > pathPlain:
		return fmt.Errorf("%w: path %d", ErrInvalidOption, c.path)
	case c.batchSize < 1 || c.batchSize > maxBatchSize || c.batchInFlight < 1:
		return fmt.Errorf("%w: batching needs size in [1, %d] and in-flight ≥ 1, got %d and %d",
			ErrInvalidOption, maxBatchSize, c.batchSize, c.batchInFlight)
	case c.acksSet && c.acks < 1:
		return fmt.Errorf("%w: WithReplicaAcks(%d, %v): wait for at least one replica (leave the option out for none)",
			ErrInvalidOption, c.acks, c.ackTimeout)
	case c.acksSet && (c.ackTimeout < time.Millisecond || c.ackTimeout%time.Millisecond != 0 || c.ackTimeout >= c.timeout):
		return fmt.Errorf("%w: WithReplicaAcks(%d, %v): the timeout must be a whole number of milliseconds, at least 1ms and shorter than the decision's timeout (%v, WithTimeout)",
			ErrInvalidOption, c.acks, c.ackTimeout, c.timeout)
	}
	return c.lease.validate()
}
