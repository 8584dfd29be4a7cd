// Package hitboard shares the refusal sketches (package hitters) of the
// replicas of a service through their Redis: each replica writes its
// own under a key of its own, at most once a second (the caller's
// pace), and reads the others' to merge. Every key of one board shares
// one hash tag, so that a Redis Cluster keeps them on one node and a
// read is one MGET.
//
// Redis holds, per replica, one string (its summary, JSON, living an
// hour) and one sorted set names the replicas that wrote in the last
// hour.
package hitboard

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/hitters"
)

// A Summary is what one replica wrote: its sketch's entries, as of At.
type Summary struct {
	At      int64           `json:"at"` // Unix ms, the replica's latest refusal
	Entries []hitters.Entry `json:"entries"`
}

// A Board is the replicas' summaries in one Redis. It is safe for
// concurrent use.
type Board struct {
	c       redis.UniversalClient
	set     string // the sorted set of replicas, by when they wrote
	replica string // this replica's name
	now     func() time.Time
}

// New returns the board under prefix on c, written as replica. now
// dates the writes, for the sorted set to drop the replicas that have
// not written for an hour.
func New(c redis.UniversalClient, prefix, replica string, now func() time.Time) *Board {
	return &Board{c: c, set: "{" + prefix + "refusals}", replica: replica, now: now}
}

// key is the key of replica's summary.
func (b *Board) key(replica string) string { return b.set + ":" + replica }

// Publish writes s as this replica's summary, in one round trip.
func (b *Board) Publish(ctx context.Context, s Summary) error {
	body, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("hitboard: %w", err)
	}
	ms := b.now().UnixMilli()
	_, err = b.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, b.key(b.replica), body, hitters.Span*time.Millisecond)
		p.ZAdd(ctx, b.set, redis.Z{Score: float64(ms), Member: b.replica})
		p.ZRemRangeByScore(ctx, b.set, "-inf", "("+strconv.FormatInt(ms-hitters.Span, 10))
		p.PExpire(ctx, b.set, hitters.Span*time.Millisecond)
		return nil
	})
	if err != nil {
		return fmt.Errorf("hitboard: publish: %w", err)
	}
	return nil
}

// Others returns the summaries the other replicas wrote in the last
// hour, in two round trips.
func (b *Board) Others(ctx context.Context) ([]Summary, error) {
	ms := b.now().UnixMilli()
	names, err := b.c.ZRangeByScore(ctx, b.set, &redis.ZRangeBy{Min: strconv.FormatInt(ms-hitters.Span, 10), Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("hitboard: read replicas: %w", err)
	}
	var keys []string
	for _, n := range names {
		if n != b.replica {
			keys = append(keys, b.key(n))
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	vals, err := b.c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, fmt.Errorf("hitboard: read summaries: %w", err)
	}
	out := make([]Summary, 0, len(vals))
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			continue // expired since the set was read
		}
		var s Summary
		if err := json.Unmarshal([]byte(str), &s); err != nil {
			return nil, fmt.Errorf("hitboard: summary of %s: %w", keys[i], err)
		}
		out = append(out, s)
	}
	return out, nil
}
