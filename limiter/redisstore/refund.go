package redisstore

import (
	"context"
	_ "embed"
	"fmt"
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
	return s.refundRedis(ctx, req, &d)
}

// refundRedis returns req.Cost to the windows of Redis d charged that are
// still current, in one script call sent at most once.
func (s *Store) refundRedis(ctx context.Context, req limiter.Request, d *limiter.Decision) error {
	pk := s.keys.get(req.Policy)
	n := req.Policy.NumRates()
	at := d.DecidedAt().UnixMilli()
	keys := appendKeys(nil, s.cfg.prefix, req.Key, pk, n, s.cfg.clock, at)
	clock := "a"
	if s.cfg.clock == serverClock {
		clock = "s"
	}
	cmd := []any{"evalsha", refundHash, 0}
	args := []any{clock, req.Cost}
	for i := range n {
		id, start, end := pk.window(i, at)
		if now, _, _ := pk.window(i, req.Now.UnixMilli()); s.cfg.clock == appClock && now != id {
			continue // ended: a refund never lends to a later window
		}
		cmd = append(cmd, keys[i])
		args = append(args, strconv.FormatInt(id, 10), start, end)
	}
	if len(args) == 2 {
		return nil
	}
	cmd[2] = (len(args) - 2) / 3
	cmd = append(cmd, args...)
	tctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	send := func() error {
		if s.cfg.acks == 0 {
			_, err := s.send(tctx, s.client, cmd, false)
			return err
		}
		s.stats.roundTrips.Add(1)
		return s.acked(tctx, req.Key, redis.NewCmd(tctx, cmd...))
	}
	err := send()
	if isNoScript(err) {
		cmd[0], cmd[1] = "eval", refundSource
		err = send()
	}
	s.cache.forget(req.Policy, req.Key)
	if err != nil {
		return fmt.Errorf("redisstore: refund: %w", named(deadlineErr(tctx, err)))
	}
	return nil
}
