package redisstore

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// Health is the store's view of one Redis server, from its calls and its
// circuit breaker.
type Health uint8

const (
	// Healthy: decisions go to Redis.
	Healthy Health = iota
	// Unavailable: the breaker is open; every decision is answered at
	// once as when Redis cannot decide (an error, or WithFailOpen's or
	// WithFailLocal's answer), and nothing is sent to Redis.
	Unavailable
	// Probing: the open time has passed; one decision is sent to Redis to
	// see whether it is back, the others are answered by the failure
	// policy.
	Probing
	// Failing: the last calls to the server failed (an outage: it could
	// not be reached, timed out, or is not ready to serve), fewer of them
	// in a row than open the breaker (WithBreaker); decisions still go to
	// it. The first success makes it Healthy again.
	Failing
)

// String returns "healthy", "unavailable", "probing" or "failing".
func (h Health) String() string {
	switch h {
	case Unavailable:
		return "unavailable"
	case Probing:
		return "probing"
	case Failing:
		return "failing"
	}
	return "healthy"
}

// An EventKind says what an Event reports.
type EventKind uint8

const (
	// HealthChanged: a destination's health went From → To: its first
	// failure after a success (Healthy → Failing), its breaker opening,
	// probing, closing, or a success after failures (Failing → Healthy).
	HealthChanged EventKind = iota
	// CorruptValue: a decision, or a call on an in-flight cap's slots,
	// found a value in Redis the store did not write (Err wraps
	// ErrCorruptValue and names its Redis key). The key is refused until
	// the value expires or is deleted: a cap's refusal then has Remaining 0.
	CorruptValue
	// RiskyMemoryPolicy: New found a server whose maxmemory settings turn
	// a flood of fresh keys against the limit (noeviction with maxmemory
	// set: every decision fails with OOM once Redis is full; LRU, TTL or
	// random eviction: spent counters evicted, their budgets start
	// again). Err names the server and what to set instead. The store
	// works all the same. A service with no observer sees the same line
	// among Ping's warnings.
	RiskyMemoryPolicy
	// KeysDeclared: the server Node refused a script call for the keys it
	// declared (none, for a Cluster master's node call; the keys of many
	// client keys, across slots), before running it, as DragonflyDB and proxies that route
	// by key do (Err is its refusal). Its decisions were sent again, and
	// from now on every call declares its keys, one client key per call:
	// more calls for the same decisions (see WithDeclaredKeys). Sent once.
	KeysDeclared
)

// An Event is something the operator should know: a change of one
// destination's health, a corrupt value, a risky server setting, a host
// that needs every key declared. The zero Event is not sent.
type Event struct {
	Kind EventKind
	// Node names the destination of a HealthChanged or a KeysDeclared: a
	// server's address (a single node, a Cluster master, a Ring shard),
	// "client" on the Plain path. On a Cluster the calls go-redis routes by
	// slot count for the master the slot map names.
	Node string
	// From and To are the health before and after a HealthChanged.
	From, To Health
	// Err is the failure that made a destination Failing or opened its
	// breaker, the corrupt value, the risky setting or the refusal; nil
	// on other changes. A failure has a method
	// Reason() string naming it (see ErrUnavailable).
	Err error
}

// String describes e for a log line: "10.0.0.7:6379 healthy → failing:
// connection refused: dial tcp ...", or the error of a corrupt value or a
// risky setting.
func (e Event) String() string {
	if e.Kind != HealthChanged {
		if e.Err == nil {
			return "<nil>"
		}
		return e.Err.Error()
	}
	s := e.Node + " " + e.From.String() + " → " + e.To.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// reportCorrupt tells the observer of each window that the script found
// corrupt in r. Such a window is refused (its count is -1) and the
// over-limit cache then answers for the key for a second at most (until
// the window ends, if sooner), so a corrupt key is reported about once a
// second per replica.
func (s *Store) reportCorrupt(req *limiter.Request, r *result) {
	if s.cfg.observer == nil {
		return
	}
	n := req.Policy.NumRates()
	var keys []string
	for i := range n {
		if r.counts[i] >= 0 {
			continue
		}
		if keys == nil {
			keys = appendKeys(nil, s.cfg.prefix, req.Key, s.keys.get(req.Policy), n, s.cfg.clock, req.Now.UnixMilli())
		}
		s.cfg.observer(Event{Kind: CorruptValue,
			Err: fmt.Errorf("%w: key %q", ErrCorruptValue, keys[i])})
	}
}

// reportCorruptSlot tells the observer when a slot call found a value of
// another type under key, a slot key (r.counts[0] is -1). No cache
// answers for such a key, as the over-limit cache does for a corrupt
// counter: every slot call that finds it reports it.
func (s *Store) reportCorruptSlot(key string, r *result) {
	if s.cfg.observer == nil || r.counts[0] >= 0 {
		return
	}
	s.cfg.observer(Event{Kind: CorruptValue, Err: fmt.Errorf("%w: key %q", ErrCorruptValue, key)})
}

func health(s gobreaker.State) Health {
	switch s {
	case gobreaker.StateOpen:
		return Unavailable
	case gobreaker.StateHalfOpen:
		return Probing
	}
	return Healthy
}

// errQueued marks a decision that ran out of time queued inside the
// client (see Store.queued): not Redis's failure, so the breaker does not
// count it; the failure policy answers it all the same.
type errQueued struct{ err error }

func (e errQueued) Error() string { return e.err.Error() }
func (e errQueued) Unwrap() error { return e.err }

func isQueued(err error) bool {
	var q errQueued
	return errors.As(err, &q)
}

// newBreaker builds d's circuit breaker and wires its transitions to
// d's health and the observer.
func (s *Store) newBreaker(d *dest) *gobreaker.CircuitBreaker[any] {
	failures := uint32(s.cfg.breakerFailures)
	return gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        d.name,
		MaxRequests: 1,
		Timeout:     s.cfg.breakerOpen,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || !isOutage(err)
		},
		IsExcluded: isQueued,
		OnStateChange: func(_ string, _, to gobreaker.State) {
			from := Health(d.health.Swap(uint32(health(to))))
			if s.cfg.observer == nil {
				return
			}
			e := Event{Kind: HealthChanged, Node: d.name, From: from, To: health(to)}
			if to == gobreaker.StateOpen {
				if p := d.lastErr.Load(); p != nil {
					e.Err = *p
				}
			}
			s.cfg.observer(e)
		},
	})
}

// noteCall moves d between Healthy and Failing after a call its breaker
// counted, closed, as succeeded (err nil) or failed (err an outage), and
// tells the observer. The breaker's own changes (open, probing, closed)
// are OnStateChange's.
func (s *Store) noteCall(d *dest, err error) {
	from, to := Failing, Healthy
	if err != nil {
		if !isOutage(err) || isQueued(err) {
			return
		}
		from, to = Healthy, Failing
	}
	if !d.health.CompareAndSwap(uint32(from), uint32(to)) || s.cfg.observer == nil {
		return
	}
	s.cfg.observer(Event{Kind: HealthChanged, Node: d.name, From: from, To: to, Err: err})
}

// recentDest is how long a destination no round has sent to still counts
// in Health: a master replaced in a failover drops out of it.
const recentDest = 10 * time.Second

// Health reports the health of each destination decisions went to in the
// last ten seconds, by Event.Node's names: a server whose last calls
// failed is Failing from the first failure, Unavailable once its breaker
// opens, while the others may be deciding.
func (s *Store) Health() map[string]Health {
	m := map[string]Health{}
	since := time.Now().Add(-recentDest).UnixNano()
	s.dests.Range(func(_, v any) bool {
		if d := v.(*dest); d.used.Load() >= since {
			m[d.name] = Health(d.health.Load())
		}
		return true
	})
	return m
}

// outagePrefixes are the error replies of a server that cannot serve now:
// they count as outages for the breaker, as network errors and timeouts
// do. Every other error reply (OOM, NOPERM, ...) is an answer: it fails
// its decisions, named for what it is, and leaves the breaker closed, so
// that the reason stays visible instead of "circuit breaker open".
//
// CLUSTERDOWN and TRYAGAIN are answers too: they tell a slot's state (the
// cluster lost a master and serves none of its slots, or none at all
// under cluster-require-full-coverage; a slot mid-migration), not the
// answering server's, which answered at once and serves its other slots.
// Counted, they opened the breaker of a master whose own slots were fine
// once the cluster was whole again, for the breaker's open time.
var outagePrefixes = []string{"LOADING", "READONLY", "MASTERDOWN", "BUSY", "NOREPLICAS"}

// isOutage tells failures of Redis (network, timeout, a server not ready
// to serve) from answers that report an error: only the former open the
// breaker.
func isOutage(err error) bool {
	if errors.Is(err, ErrBadReply) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range outagePrefixes {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}
