package redisstore

import (
	"context"
	"fmt"
	"strings"
)

// The batcher reads the script's reply as raw RESP: a flat array of
// integers, parsed here without the interface value per element that
// go-redis's generic reply would allocate.

// serverError is an error reply from Redis, read from raw RESP. It
// satisfies redis.Error, as go-redis's own error replies do.
type serverError string

func (e serverError) Error() string { return string(e) }

// RedisError marks serverError as a reply from the server.
func (serverError) RedisError() {}

// evalRaw runs the script with EVALSHA and, when Redis answers NOSCRIPT,
// with EVAL, through the circuit breaker. cmd is "evalsha", the hash, the
// number of keys, the keys and the arguments; it is modified.
func (bt *batcher) evalRaw(ctx context.Context, cmd []any) ([]byte, error) {
	s := bt.s
	v, err := s.breaker.Execute(func() (any, error) {
		left := timeLeft(ctx)
		b, err := bt.rawCall(ctx, cmd)
		if se, ok := err.(serverError); ok && strings.HasPrefix(string(se), "NOSCRIPT") {
			cmd[0], cmd[1] = "eval", takeSource
			b, err = bt.rawCall(ctx, cmd)
		}
		if err != nil {
			if err = s.queued(left, deadlineErr(ctx, err)); !isQueued(err) {
				s.lastErr.Store(&err)
			}
			return nil, err
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	return v.([]byte), nil
}

func (bt *batcher) rawCall(ctx context.Context, cmd []any) ([]byte, error) {
	bt.s.stats.roundTrips.Add(1)
	b, err := bt.client.DoRaw(ctx, cmd...).Result()
	if err != nil {
		return nil, err
	}
	if len(b) > 0 && b[0] == '-' {
		return nil, serverError(strings.TrimRight(string(b[1:]), "\r\n"))
	}
	return b, nil
}

// respInts reads a RESP array of integers.
type respInts struct {
	b []byte
	i int
}

// line reads one "<kind><number>\r\n" line.
func (r *respInts) line(kind byte) (int64, error) {
	if r.i >= len(r.b) || r.b[r.i] != kind {
		return 0, fmt.Errorf("%w: want %q at byte %d", ErrBadReply, kind, r.i)
	}
	r.i++
	neg := false
	if r.i < len(r.b) && r.b[r.i] == '-' {
		neg = true
		r.i++
	}
	var n int64
	digits := 0
	for r.i < len(r.b) && r.b[r.i] >= '0' && r.b[r.i] <= '9' {
		if digits == 18 {
			return 0, fmt.Errorf("%w: number too long at byte %d", ErrBadReply, r.i)
		}
		n = n*10 + int64(r.b[r.i]-'0')
		digits++
		r.i++
	}
	if digits == 0 || r.i+1 >= len(r.b) || r.b[r.i] != '\r' || r.b[r.i+1] != '\n' {
		return 0, fmt.Errorf("%w: malformed line at byte %d", ErrBadReply, r.i)
	}
	r.i += 2
	if neg {
		n = -n
	}
	return n, nil
}

// parseRaw splits a raw reply into the results of len(out) requests, the
// i'th with windows(i) windows (see parseReply).
func parseRaw(b []byte, windows func(i int) int, out []result) error {
	r := respInts{b: b}
	total, err := r.line('*')
	if err != nil {
		return err
	}
	want := int64(2)
	for i := range out {
		want += 2 + int64(windows(i))
	}
	if total != want {
		return fmt.Errorf("%w: %d values for %d requests, want %d", ErrBadReply, total, len(out), want)
	}
	sec, err := r.line(':')
	if err != nil {
		return err
	}
	usec, err := r.line(':')
	if err != nil {
		return err
	}
	for i := range out {
		res := &out[i]
		a, err := r.line(':')
		if err != nil {
			return err
		}
		at, err := r.line(':')
		if err != nil {
			return err
		}
		res.allowed, res.at, res.sec, res.usec, res.granted = a >= 1, at, sec, usec, max(0, a-1)
		for w := range windows(i) {
			if res.counts[w], err = r.line(':'); err != nil {
				return err
			}
		}
	}
	if r.i != len(b) {
		return fmt.Errorf("%w: %d bytes left over", ErrBadReply, len(b)-r.i)
	}
	return nil
}
