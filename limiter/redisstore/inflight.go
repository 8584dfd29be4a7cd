package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// In-flight slots (limiter.InFlight) in Redis. A key's slots under a cap
// are one sorted set,
//
//	<prefix>{<client key>}:<cap name>:inflight
//
// one member per slot, named by a token this store made (its random id
// and a counter: unique across replicas), scored by when the slot's
// lease ends in ms of Redis's TIME. Taking, renewing and giving back a
// slot are each one atomic run of inflight.lua, batched in rounds as
// decisions are (round.go), on every kind of client, with the same
// breakers, failure policy and named errors. A token makes every call
// idempotent: a hold sent twice (a Cluster's resend of a node call's
// request found elsewhere) holds one slot, a release sent twice frees one.
//
// The store renews the slots it holds in the background, so a request
// keeps its slot however long it runs, and a replica that dies holding
// slots gives them back when their leases end (inflight_held.go).
// Redis's clock alone judges a lease: no replica's clock step frees a
// slot early or keeps one. The cap name, not its maximum, names the set:
// replicas that disagree on the maximum during a deploy share one set,
// and each admits up to its own.

//go:embed inflight.lua
var slotSource string

// slotHash is inflight.lua's SHA-1, which EVALSHA names it by.
var slotHash = redis.NewScript(slotSource).Hash()

// The ops of inflight.lua.
const (
	opHold    = "h" // take a slot, or extend one the token holds
	opRelease = "r" // give the token's slot back
	opCount   = "c" // count the slots held, changing nothing
)

// A slotOp is a slot call's part of a call: the op, the slot's Redis
// key and member, and for a hold the most slots and the lease.
type slotOp struct {
	op, key, member string
	most, leaseMs   int64
}

// localToken marks a slot WithFailLocal's fallback took; a Slot with
// Token 0 is charged to nothing (WithFailOpen). Tokens of Redis slots
// count from 1 and never reach it.
const localToken = 1 << 63

// slotKey returns the Redis key of key's slots under the cap p.
func slotKey(prefix, key string, p *limiter.Policy) string {
	return prefix + "{" + tag(key) + "}:" + p.Name() + ":inflight"
}

// checkSlot reports what no store should be asked about slots.
func (s *Store) checkSlot(req *limiter.SlotRequest) error {
	switch m := req.Policy.MaxInFlight(); {
	case s.closed.Load():
		return limiter.ErrClosed
	case m <= 0:
		return fmt.Errorf("%w: nil Policy or one of rates; slots need an InFlight's", limiter.ErrInvalidPolicy)
	case req.Max <= 0 || req.Max > limiter.MaxLimit:
		return fmt.Errorf("%w: slot max %d must be in [1, %d]", limiter.ErrInvalidPolicy, req.Max, limiter.MaxLimit)
	case req.Key == "":
		return limiter.ErrInvalidKey
	case req.Lease < time.Second: // WithInFlightLease's floor
		return fmt.Errorf("%w: slot lease %v must be ≥ 1s", limiter.ErrInvalidOption, req.Lease)
	}
	req.Key = s.clientKey(req.Key)
	return nil
}

// AcquireSlot takes one of req.Max slots of req.Key under the cap
// req.Policy, in one atomic script run shared with the calls queued
// beside it, bounded by the store's timeout and ctx; the slot is then
// renewed in the background until ReleaseSlot. When Redis cannot decide,
// it returns an error wrapping ErrUnavailable, or WithFailOpen's slot
// (charged to nothing) or WithFailLocal's (from a local cap of
// req.Max/divisor, at least 1). A refusal is a Slot with Acquired false,
// never an error.
//
// A call that failed may have taken its slot, its reply lost: the store
// gives such a slot back in the background, once the call can no longer
// be running, and its lease ends anyway.
func (s *Store) AcquireSlot(ctx context.Context, req limiter.SlotRequest) (limiter.Slot, error) {
	if err := s.checkSlot(&req); err != nil {
		return limiter.Slot{}, err
	}
	if req.Peek {
		n, err := s.heldSlots(ctx, req)
		return limiter.Slot{Held: n, Max: req.Max}, err
	}
	tok := s.tokens.Add(1)
	hs := &heldSlot{token: tok, key: req.Key, policy: req.Policy, lease: req.Lease, slotOp: slotOp{
		op: opHold, key: slotKey(s.cfg.prefix, req.Key, req.Policy),
		member: s.id + strconv.FormatUint(tok, 36), most: req.Max, leaseMs: req.Lease.Milliseconds(),
	}}
	sent := time.Now()
	deadline := sent.Add(s.cfg.timeout)
	r, err := s.slotBatch.doSlot(ctx, req.Key, req.Policy, hs.slotOp, deadline)
	if err == nil {
		if r.counts[0] < 0 {
			// A foreign value under the key: refused as a full cap is, so
			// that the refusal says none remain.
			s.reportCorruptSlot(hs.slotOp.key, &r)
			return limiter.Slot{Held: req.Max, Max: req.Max}, nil
		}
		if !r.allowed {
			return limiter.Slot{Held: r.counts[0], Max: req.Max}, nil
		}
		s.held.add(hs, sent)
		return limiter.Slot{Acquired: true, Held: r.counts[0], Max: req.Max, Token: tok}, nil
	}
	s.held.orphan(hs, deadline)
	if cerr := ended(ctx); cerr != nil {
		return limiter.Slot{}, cerr
	}
	if errors.Is(err, limiter.ErrClosed) {
		return limiter.Slot{}, err
	}
	return s.degradeSlot(ctx, &req, err)
}

// degradeSlot answers a slot request Redis could not decide, by the
// failure policy, as degrade answers a decision.
func (s *Store) degradeSlot(ctx context.Context, req *limiter.SlotRequest, err error) (limiter.Slot, error) {
	s.stats.failures.Add(1)
	if errors.Is(err, ErrBadReply) {
		return limiter.Slot{}, err
	}
	switch s.cfg.failure {
	case failOpen:
		s.stats.degraded.Add(1)
		return limiter.Slot{Acquired: true, Held: 1, Max: req.Max}, nil // Token 0: charged to nothing
	case failLocal:
		s.stats.degraded.Add(1)
		fr := *req
		fr.Max = max(1, req.Max/s.cfg.divisor)
		sl, err := s.fallback.AcquireSlot(ctx, fr)
		if sl.Acquired {
			sl.Token = localToken
		}
		return sl, err
	}
	return limiter.Slot{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

// ReleaseSlot gives back sl, a slot AcquireSlot granted for req: in one
// script run shared with the calls queued beside it, or to the fallback
// that took it (WithFailLocal); a slot charged to nothing (WithFailOpen),
// one already given back, and one the store lost (Redis ended its lease
// while it could not be renewed, and another took its place) give back
// nothing. Its renewals stop at once. On an error the store gives the
// slot back in the background, and its lease ends anyway.
func (s *Store) ReleaseSlot(ctx context.Context, req limiter.SlotRequest, sl limiter.Slot) error {
	switch {
	case !sl.Acquired || sl.Token == 0:
		return nil
	case sl.Token == localToken:
		if s.fallback == nil {
			return nil
		}
		fr := req
		fr.Key, fr.Max = s.clientKey(req.Key), sl.Max
		return s.fallback.ReleaseSlot(ctx, fr, limiter.Slot{Acquired: true, Max: sl.Max})
	}
	hs := s.held.remove(sl.Token)
	if hs == nil {
		return nil
	}
	if s.closed.Load() {
		return limiter.ErrClosed // its lease ends by itself
	}
	deadline := time.Now().Add(s.cfg.timeout)
	op := hs.slotOp
	op.op = opRelease
	r, err := s.slotBatch.doSlot(ctx, hs.key, hs.policy, op, deadline)
	if err != nil {
		s.held.orphan(hs, deadline)
		return fmt.Errorf("redisstore: release: %w", err)
	}
	s.reportCorruptSlot(op.key, &r)
	return nil
}

// heldSlots returns how many slots req.Key holds under the cap
// req.Policy (AcquireSlot's answer to a peek), by Redis's clock (a slot
// whose lease has ended is not counted), in one script run shared with
// the calls queued beside it, bounded by the store's timeout and ctx. A
// foreign value under the key reads as req.Max, reported to the observer
// as corrupt. When Redis cannot answer, the error wraps ErrUnavailable:
// no failure policy applies to a count.
func (s *Store) heldSlots(ctx context.Context, req limiter.SlotRequest) (int64, error) {
	op := slotOp{op: opCount, key: slotKey(s.cfg.prefix, req.Key, req.Policy)}
	r, err := s.slotBatch.doSlot(ctx, req.Key, req.Policy, op, time.Now().Add(s.cfg.timeout))
	switch {
	case err != nil:
		if cerr := ended(ctx); cerr != nil {
			return 0, cerr
		}
		if errors.Is(err, limiter.ErrClosed) {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case r.counts[0] < 0:
		s.reportCorruptSlot(op.key, &r)
		return req.Max, nil
	}
	return r.counts[0], nil
}

// slotScript takes, renews and gives back slots with inflight.lua.
type slotScript struct{}

func (slotScript) keys(dst []string, c *call) ([]string, int) { return append(dst, c.slot.key), 1 }

func (slotScript) args(dst []any, calls []*call, argKeys []string, _ *roundBuf) []any {
	dst = append(dst, len(calls), len(argKeys))
	for _, k := range argKeys {
		dst = append(dst, k)
	}
	for _, c := range calls {
		dst = append(dst, c.slot.op, c.slot.member)
		if c.slot.op == opHold {
			dst = append(dst, c.slot.most, c.slot.leaseMs)
		}
	}
	return dst
}

// parse reads inflight.lua's reply: per request the verdict (-1, only in
// a node call's reply, for a key not on the node) and the slots held (-1,
// only beside verdict 0, for a key holding a value of another type:
// counts[0] is then -1, as a corrupt count's is in take.lua's results).
func (slotScript) parse(sc *scriptCall, node bool) error {
	r := &sc.reply
	n, err := r.array()
	if err != nil {
		return err
	}
	if n != 2*int64(len(sc.res)) {
		return fmt.Errorf("%w: %d values for %d slot requests, want %d", ErrBadReply, n, len(sc.res), 2*len(sc.res))
	}
	for i := range sc.res {
		v, err := r.int()
		if err != nil {
			return err
		}
		held, err := r.int()
		if err != nil {
			return err
		}
		if v < -1 || v > 2 || v == -1 && !node || held < -1 || held == -1 && v != 0 {
			return fmt.Errorf("%w: slot verdict %d, %d held", ErrBadReply, v, held)
		}
		res := &sc.res[i]
		res.allowed, res.granted, res.elsewhere, res.counts[0] = v >= 1, v, v == -1, held
	}
	return nil
}

func (slotScript) source() string { return slotSource }
func (slotScript) hash() string   { return slotHash }

// newStoreID returns the prefix of this store's slot tokens: 128 random
// bits, so that no two stores (replicas, restarts) name a slot alike.
func newStoreID() string {
	return strconv.FormatUint(rand.Uint64(), 36) + "." + strconv.FormatUint(rand.Uint64(), 36) + ":"
}

var _ limiter.SlotStore = (*Store)(nil)
