package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"slices"
	"strconv"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

//go:embed refund.lua
var refundSource string

var refundHash = redis.NewScript(refundSource).Hash()

// Refund returns req.Cost to the windows d charged, while each is still
// current, never below zero (see limiter.Store). With leases, what this
// replica spent from its lease in d's windows goes back to the lease, with
// no round trip; the rest to Redis, in one script call sent
// at most once (as a charge is), bounded by the timeout, through the
// client, which routes it by the key's hash tag. With WithServerClock
// Redis's TIME says whether a window is still current; otherwise req.Now
// does. A decision WithFailLocal's fallback made is refunded to it; one
// WithFailOpen admitted was charged to nothing. This store's over-limit cache
// forgets the key, so that its next request asks Redis; other replicas
// obey the refund within a second, as after Reset (their caches keep an
// entry at most that long).
func (s *Store) Refund(ctx context.Context, req limiter.Request, d limiter.Decision) error {
	if err := s.check(&req); err != nil {
		return err
	}
	// Redis's decisions carry req.Policy itself; the fallback's, a policy
	// of its own (fallbackPolicy).
	if s.fallback != nil && d.Policy != nil && d.Policy != req.Policy {
		fr := req
		fr.Policy = d.Policy
		return s.fallback.Refund(ctx, fr, d)
	}
	if ok, err := limiter.Refundable(d, req.Policy); !ok {
		return err
	}
	if req.Cost -= s.leases.refund(&req, &d); req.Cost == 0 {
		return nil // all back in this replica's lease
	}
	_, err := s.refundRedis(ctx, req, &d, leftPart{})
	return err
}

// A leftPart is units charged at an instant, ms: a second part of a
// return, in the windows of the first (giveBack's older units).
type leftPart struct{ units, at int64 }

// refundRedis returns req.Cost, and older's units, to the windows of
// Redis d charged that are still current, in one script call sent at
// most once, and says how many units went back (to the window that got
// the most): none to a window a Reset has marked at or after the charge
// (reset.lua), none below zero.
func (s *Store) refundRedis(ctx context.Context, req limiter.Request, d *limiter.Decision, older leftPart) (int64, error) {
	pk := s.keys.get(req.Policy)
	n := req.Policy.NumRates()
	at := d.DecidedAt().UnixMilli()
	counts := appendKeys(nil, s.cfg.prefix, req.Key, pk, n, s.cfg.clock, at)
	marks := appendResetMarks(nil, s.cfg.prefix, req.Key, pk, n)
	clock := "a"
	if s.cfg.clock == serverClock {
		clock = "s"
	}
	var keys []string
	args := []any{clock, req.Cost, at, older.units, older.at}
	for i := range n {
		id, start, end := pk.window(i, at)
		if now, _, _ := pk.window(i, req.Now.UnixMilli()); s.cfg.clock == appClock && now != id {
			continue // ended: a refund never lends to a later window
		}
		keys = append(keys, counts[i])
		args = append(args, strconv.FormatInt(id, 10), start, end)
	}
	if len(keys) == 0 {
		return 0, nil
	}
	for i := range n {
		if slices.Contains(keys, counts[i]) {
			keys = append(keys, marks[i])
		}
	}
	cmd := append(scriptCommand(nil, refundHash, keys), args...)
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	r, err := s.sendOnce(tctx, req.Key, cmd)
	if isNoScript(err) {
		cmd[0], cmd[1] = "eval", refundSource
		r, err = s.sendOnce(tctx, req.Key, cmd)
	}
	s.cache.forget(req.Policy, req.Key)
	if err != nil {
		return 0, fmt.Errorf("redisstore: refund: %w", named(deadlineErr(tctx, err)))
	}
	back, ok := r.parsed.(int64)
	if !ok {
		return 0, fmt.Errorf("redisstore: refund: %w: %T", ErrBadReply, r.parsed)
	}
	return back, nil
}
