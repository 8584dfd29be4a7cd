package redisstore

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/limiter"
)

// replyReader reads the script's reply, a flat array of integers, from
// either source: raw RESP bytes (Batch on one node, and a Cluster's node
// calls, sent to one master each) or go-redis's parsed reply (calls that
// go-redis routes, where a Cluster client must see MOVED and ASK: Plain,
// and a Cluster's slot calls). parseReply is the one reader of its
// layout.
type replyReader struct {
	raw      []byte
	parsed   any
	isParsed bool
	i        int // next byte of raw, or next element of parsed
}

// array reads the length of the reply's array.
func (r *replyReader) array() (int64, error) {
	if r.isParsed {
		vals, ok := r.parsed.([]any)
		if !ok {
			return 0, fmt.Errorf("%w: %T", ErrBadReply, r.parsed)
		}
		return int64(len(vals)), nil
	}
	return r.line('*')
}

// int reads the next integer of the array.
func (r *replyReader) int() (int64, error) {
	if r.isParsed {
		vals := r.parsed.([]any) // array succeeded
		if r.i >= len(vals) {
			return 0, fmt.Errorf("%w: %d values, want more", ErrBadReply, len(vals))
		}
		n, ok := vals[r.i].(int64)
		if !ok {
			return 0, fmt.Errorf("%w: value %d is %T %v, want an integer", ErrBadReply, r.i, vals[r.i], vals[r.i])
		}
		r.i++
		return n, nil
	}
	return r.line(':')
}

// left returns how many elements (parsed) or bytes (raw) are unread.
func (r *replyReader) left() int {
	if r.isParsed {
		return len(r.parsed.([]any)) - r.i
	}
	return len(r.raw) - r.i
}

// line reads one raw "<kind><number>\r\n" line.
func (r *replyReader) line(kind byte) (int64, error) {
	b := r.raw
	if r.i >= len(b) || b[r.i] != kind {
		return 0, fmt.Errorf("%w: want %q at byte %d", ErrBadReply, kind, r.i)
	}
	r.i++
	neg := false
	if r.i < len(b) && b[r.i] == '-' {
		neg = true
		r.i++
	}
	var n int64
	digits := 0
	for r.i < len(b) && b[r.i] >= '0' && b[r.i] <= '9' {
		if digits == 18 {
			return 0, fmt.Errorf("%w: number too long at byte %d", ErrBadReply, r.i)
		}
		n = n*10 + int64(b[r.i]-'0')
		digits++
		r.i++
	}
	if digits == 0 || r.i+1 >= len(b) || b[r.i] != '\r' || b[r.i+1] != '\n' {
		return 0, fmt.Errorf("%w: malformed line at byte %d", ErrBadReply, r.i)
	}
	r.i += 2
	if neg {
		n = -n
	}
	return n, nil
}

// parseReply splits the reply into the results of len(out) requests, the
// i'th with windows(i) windows: with Redis's clock (server), its TIME
// (seconds, microseconds) first; then per request the verdict, the
// instant decided at when it is not TIME's millisecond (server: a verdict
// v below -2 stands for -(v + 3), followed by that instant) and the count
// of each window before the request. A verdict of -1 (a node call's
// request whose keys were not on its node) sets elsewhere; only the reply
// of a node call (node) may hold one. A verdict of -2 (Redis's TIME
// outside the calendar windows sent) sets offClock.
func parseReply(r *replyReader, windows func(i int) int, out []result, node, server bool) error {
	total, err := r.array()
	if err != nil {
		return err
	}
	var want, sec, usec int64
	if server {
		want = 2
		if sec, err = r.int(); err != nil {
			return err
		}
		if usec, err = r.int(); err != nil {
			return err
		}
	}
	for i := range out {
		res := &out[i]
		a, err := r.int()
		if err != nil {
			return err
		}
		want++
		at := sec*1000 + usec/1000
		if server && a <= -3 {
			a = -a - 3
			if at, err = r.int(); err != nil {
				return err
			}
			want++
		} else if a < -2 || a == -1 && !node {
			return fmt.Errorf("%w: verdict %d", ErrBadReply, a)
		}
		if a > 1+limiter.MaxLimit {
			// No admission grants more than MaxLimit units (a
			// moved verdict of MinInt64 wraps to here too).
			return fmt.Errorf("%w: verdict %d", ErrBadReply, a)
		}
		res.allowed, res.at, res.sec, res.usec, res.granted = a >= 1, at, sec, usec, max(0, a-1)
		res.elsewhere, res.offClock = a == -1, a == -2
		for w := range windows(i) {
			if res.counts[w], err = r.int(); err != nil {
				return err
			}
		}
		want += int64(windows(i))
	}
	if total != want {
		return fmt.Errorf("%w: %d values for %d requests, want %d", ErrBadReply, total, len(out), want)
	}
	if n := r.left(); n != 0 {
		return fmt.Errorf("%w: %d left over", ErrBadReply, n)
	}
	return nil
}
