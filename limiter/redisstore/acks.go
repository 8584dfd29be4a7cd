package redisstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// WithReplicaAcks makes every answer the store gives wait until n
// replicas of the server that decided it hold its writes, so that a
// decision the store returned survives the loss of that server: a
// replica promoted in its place (by Sentinel, or by a Cluster's
// failover) has every charge, settle, refund, Reset and in-flight slot
// the store answered for. It is Redis's WAIT n timeout, sent once per
// round of batched decisions and server, after the round's script call
// on the same connection (with a one-key write before it, so that it
// also covers what other replicas wrote and this round read), and once
// after each refund and Reset. Without it (the default) Redis replicates
// asynchronously: a master lost before its replica had a charge loses
// the charge, so a failover admits more than the limit in its window
// (docs/redis.md has the figures, with and without it).
//
// The store keeps serving while n replicas of the server acknowledge in
// time, whatever else was lost: with two replicas and n = 1, one may go.
// When fewer than n acknowledge within timeout, every decision of the
// round fails as when Redis cannot decide (an error wrapping
// ErrUnavailable whose Reason is "no_replica_ack", or WithFailOpen's or
// WithFailLocal's answer), although the master may have charged it: its
// writes are not known to be kept. Such rounds count as the server's
// failures, so after WithBreaker's failures (default 5) its breaker
// opens, and its decisions are answered at once, without waiting for
// the timeout each time, until a probe is acknowledged. A lone master
// (its replica promoted and not replaced, or none configured) is such a
// server: set n no higher than the replicas that remain through the
// failures you plan for.
//
// n must be at least 1, and timeout a whole number of milliseconds, at
// least 1ms and shorter than the decision's timeout (WithTimeout). Redis
// times a WAIT out on its event loop's tick, every 1/hz (100ms at the
// default hz 10), so one no replica answers lasts up to that long
// whatever timeout says: give WithTimeout more than both, or the
// decision times out first (an error all the same, named timeout). The
// store must send each call to one server itself (a *redis.Client, a
// failover client, a *redis.ClusterClient or a *redis.Ring): New refuses
// the option on another client, which routes calls where the store
// cannot follow with WAIT. On a Cluster a call whose slot has moved
// (MOVED, ASK) fails, charged nothing, instead of following the
// redirection, and the client's slot map is reloaded for the next rounds.
func WithReplicaAcks(n int, timeout time.Duration) Option {
	return func(c *config) { c.acks, c.ackTimeout, c.acksSet = n, timeout, true }
}

// ackKey is the key of a round's barrier: a write in the hash tag of
// key, so in a slot of the server the round goes to, after which WAIT
// waits for every write the server made before it, by any client.
func ackKey(prefix, key string) string { return prefix + "{" + tag(key) + "}:ack" }

// ackBarrierTTL is how long a barrier key lives.
const ackBarrierTTL = time.Second

// sendAcked sends calls through p, one server's client, in one pipeline
// on one connection: each call, then a barrier write in the hash tag of
// key, then WAIT. A call that ran fails with the WAIT's shortfall when
// fewer than the option's replicas acknowledged.
func (s *Store) sendAcked(ctx context.Context, p redis.UniversalClient, key string, calls []*scriptCall) {
	pipe := p.Pipeline()
	cmds := make([]rawScriptCmd, len(calls))
	for i, sc := range calls {
		cmds[i] = rawScriptCmd{redis.NewRawCmd(ctx, sc.args...)}
		_ = pipe.Process(ctx, cmds[i])
	}
	ack := s.ackCmds(ctx, pipe, key)
	s.stats.roundTrips.Add(uint64(len(calls)))
	_, _ = pipe.Exec(ctx) // each command holds its own error
	err := ack()
	for i, sc := range calls {
		b, cerr := cmds[i].Result()
		if cerr == nil && len(b) > 0 && b[0] == '-' {
			cerr = serverError(strings.TrimRight(string(b[1:]), "\r\n"))
		}
		if cerr == nil {
			cerr = err
		}
		sc.reply, sc.err = replyReader{raw: b}, cerr
	}
}

// ackCmds queues on pipe a barrier write in the hash tag of key and WAIT
// for the option's replicas, bounded by ctx's deadline, and returns what
// reports, once the pipe has run, whether they acknowledged.
func (s *Store) ackCmds(ctx context.Context, pipe redis.Pipeliner, key string) func() error {
	wait := s.cfg.ackTimeout
	if left := timeLeft(ctx) - time.Millisecond; left < wait {
		wait = max(left, time.Millisecond)
	}
	barrier := redis.NewStatusCmd(ctx, "set", ackKey(s.cfg.prefix, key), 1, "px", ackBarrierTTL.Milliseconds())
	_ = pipe.Process(ctx, onceCmd{barrier})
	acked := redis.NewIntCmd(ctx, "wait", s.cfg.acks, wait.Milliseconds())
	_ = pipe.Process(ctx, onceCmd{acked})
	return func() error {
		if err := barrier.Err(); err != nil {
			return noAck(s.cfg.acks, 0, wait, err)
		}
		n, err := acked.Result()
		if err != nil || n < int64(s.cfg.acks) {
			return noAck(s.cfg.acks, n, wait, err)
		}
		return nil
	}
}

// noAck returns the error of writes fewer than want replicas (got)
// acknowledged within wait, or whose WAIT failed (err).
func noAck(want int, got int64, wait time.Duration, err error) error {
	if err != nil {
		return &reasonError{"no_replica_ack", fmt.Errorf("no replica ack: WAIT %d %d: %w", want, wait.Milliseconds(), err)}
	}
	return &reasonError{"no_replica_ack", fmt.Errorf("no replica ack: %d of %d replicas acknowledged within %v", got, want, wait)}
}

// acked runs cmd, a refund's or a Reset's, on the server that holds key
// (its own client), followed by the barrier and WAIT (WithReplicaAcks).
func (s *Store) acked(ctx context.Context, key string, cmd redis.Cmder) error {
	d, err := s.batch.router.route(ctx, key)
	if err != nil {
		return named(err)
	}
	pipe := d.p.Pipeline()
	_ = pipe.Process(ctx, onceCmd{cmd})
	ack := s.ackCmds(ctx, pipe, key)
	_, _ = pipe.Exec(ctx)
	if err := cmd.Err(); err != nil {
		return err
	}
	return ack()
}

// sendOnce sends cmd, a script call about key, once, as send does, and
// with WithReplicaAcks waits for the replicas to acknowledge it (acked):
// a refund's or a Reset's, which do not ride in a round of decisions.
func (s *Store) sendOnce(ctx context.Context, key string, cmd []any) (replyReader, error) {
	if s.cfg.acks == 0 {
		return s.send(ctx, s.client, cmd, false)
	}
	s.stats.roundTrips.Add(1)
	c := redis.NewCmd(ctx, cmd...)
	if err := s.acked(ctx, key, c); err != nil {
		return replyReader{}, err
	}
	v, _ := c.Result()
	return replyReader{parsed: v, isParsed: true}, nil
}
