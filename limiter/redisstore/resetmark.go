package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A Reset starts exactly one fresh budget. It deletes the key's counts
// and, in the same atomic run of reset.lua, marks each window of the
// policy with the reset's instant (the limiter's clock, or Redis's TIME
// under WithServerClock). A return that reaches a window afterwards (a
// refund, a settle below its reservation, the units a lease held
// unspent) reads the mark in its script and returns nothing for a
// charge decided at or before it: those units were counted in the
// budget the Reset ended, and returning them into the fresh count would
// give the customer more than the limit (issue 36: three replicas with
// leases admitted 402 of a day of 400 after a Reset).
//
// Under the limiter's clock the instants of two replicas are compared,
// so a return is judged by the clocks' agreement: a replica whose clock
// runs ahead of the resetting one's by δ may return a charge decided
// within δ before the Reset. Under WithServerClock both instants are
// Redis's.

//go:embed reset.lua
var resetSource string

var resetHash = redis.NewScript(resetSource).Hash()

// resetTail ends a mark's key: "<prefix>{<key>}:<policy
// name>:<window>:reset". A count's key never ends so: its last part is
// a window's length, a calendar rate's period@zone, or a window id
// (digits).
var resetTail = []byte("reset")

// appendResetMarks appends the keys of the marks of key's first n
// windows under pk.
func appendResetMarks(dst []string, prefix, key string, pk *policyKeys, n int) []string {
	t := tag(key)
	for i := range n {
		dst = append(dst, windowKey(prefix, t, pk.suffix[i], ":", resetTail))
	}
	return dst
}

// reset runs reset.lua: counts are the count keys to delete, and the
// marks are those of p's windows, each living its window's length (the
// one holding now, for a calendar rate) and the margin.
func (s *Store) reset(ctx context.Context, key string, p *limiter.Policy, counts []string, now time.Time) error {
	pk := s.keys.get(p)
	n := p.NumRates()
	keys := appendResetMarks(counts, s.cfg.prefix, key, pk, n)
	clock := "a"
	if s.cfg.clock == serverClock {
		clock = "s"
	}
	cmd := make([]any, 0, 3+len(keys)+3+n)
	cmd = append(cmd, "evalsha", resetHash, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	ms := now.UnixMilli()
	cmd = append(cmd, clock, ms, len(counts))
	for i := range n {
		_, start, end := pk.window(i, ms)
		cmd = append(cmd, (end - start + s.cfg.margin.Milliseconds()))
	}
	_, err := s.sendOnce(ctx, key, cmd)
	if isNoScript(err) {
		cmd[0], cmd[1] = "eval", resetSource
		_, err = s.sendOnce(ctx, key, cmd)
	}
	if err != nil {
		return fmt.Errorf("redisstore: reset: %w", named(deadlineErr(ctx, err)))
	}
	return nil
}
