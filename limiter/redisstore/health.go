package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fixedwindow/ratelimit/limiter"

	"github.com/redis/go-redis/v9"
	"github.com/sony/gobreaker/v2"
)

// Health is the store's view of Redis, as its circuit breaker sees it.
type Health uint8

const (
	// Healthy: decisions go to Redis.
	Healthy Health = iota
	// Unavailable: the breaker is open; the failure policy answers every
	// decision at once, and nothing is sent to Redis.
	Unavailable
	// Probing: the open time has passed; one decision is sent to Redis to
	// see whether it is back, the others are answered by the failure
	// policy.
	Probing
)

// String returns "healthy", "unavailable" or "probing".
func (h Health) String() string {
	switch h {
	case Unavailable:
		return "unavailable"
	case Probing:
		return "probing"
	}
	return "healthy"
}

// An Event reports a change of health or, with From == To and Err
// wrapping ErrCorruptValue, a corrupt value found in Redis (its Redis key
// is in Err's text). The zero Event is not sent.
type Event struct {
	From, To Health
	// Policy is the failure policy now answering (To != Healthy) or that
	// answered until now (To == Healthy).
	Policy FailurePolicy
	// Err is the failure that opened the breaker, or the corrupt value;
	// nil on other changes.
	Err error
}

// reportCorrupt tells the observer of each window that the script found
// corrupt in r. Such a window is refused (its count is -1) and the
// over-limit cache then answers for the key until the window ends, so a
// corrupt key is reported about once per window per replica.
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
		h := s.Health()
		s.cfg.observer(Event{From: h, To: h, Policy: s.cfg.failure,
			Err: fmt.Errorf("%w: key %q", ErrCorruptValue, keys[i])})
	}
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

// errCallerGone marks a round trip abandoned because the caller's own
// context ended: no fault of Redis, so the breaker does not count it.
type errCallerGone struct{ err error }

func (e errCallerGone) Error() string { return e.err.Error() }
func (e errCallerGone) Unwrap() error { return e.err }

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

// newBreaker builds the circuit breaker and wires its transitions to the
// observer.
func (s *Store) newBreaker() *gobreaker.CircuitBreaker[any] {
	failures := uint32(s.cfg.breakerFailures)
	return gobreaker.NewCircuitBreaker[any](gobreaker.Settings{
		Name:        "redisstore",
		MaxRequests: 1,
		Timeout:     s.cfg.breakerOpen,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= failures },
		IsSuccessful: func(err error) bool {
			return err == nil || !isOutage(err)
		},
		IsExcluded: func(err error) bool {
			var g errCallerGone
			return errors.As(err, &g) || isQueued(err)
		},
		OnStateChange: func(_ string, from, to gobreaker.State) {
			s.health.Store(uint32(health(to)))
			if s.cfg.observer == nil {
				return
			}
			e := Event{From: health(from), To: health(to), Policy: s.cfg.failure}
			if to == gobreaker.StateOpen {
				if p := s.lastErr.Load(); p != nil {
					e.Err = *p
				}
			}
			s.cfg.observer(e)
		},
	})
}

// isOutage tells failures of Redis (network, timeout, a server not ready
// to serve) from answers that merely report an error about one request:
// only the former open the breaker.
func isOutage(err error) bool {
	if errors.Is(err, ErrBadReply) {
		return false
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "NOREPLICAS", "OOM"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	return true
}
