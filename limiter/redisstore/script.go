package redisstore

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

//go:embed take.lua
var takeSource string

// takeScript is built once; Run sends EVALSHA and falls back to EVAL when
// the server answers NOSCRIPT (after a restart or SCRIPT FLUSH).
var takeScript = redis.NewScript(takeSource)

// Arguments of the script, before the requests (see take.lua).
const (
	headerArgs  = 3 // clock, margin, number of requests
	requestArgs = 5 // now ms, cost, peek, want, number of windows
)

// header returns the script's leading arguments for n requests.
func (c *config) header(n int) [headerArgs]any {
	clock := "a"
	if c.clock == ServerClock {
		clock = "s"
	}
	return [headerArgs]any{clock, c.margin.Milliseconds(), n}
}

// appendArgs appends one request's arguments; want is the lease it asks
// for (0: none).
func appendArgs(dst []any, req *limiter.Request, pk *policyKeys, want int64) []any {
	peek := 0
	if req.Peek {
		peek = 1
	}
	dst = append(dst, req.Now.UnixMilli(), req.Cost, peek, want, len(pk.rates)/2)
	return append(dst, pk.rates...)
}

// A result is what the script found for one request.
type result struct {
	allowed bool
	at      int64 // the instant decided at, ms (ServerClock)
	sec     int64 // TIME (ServerClock)
	usec    int64
	counts  [limiter.MaxWindows]int64 // before the request; -1 if corrupt
	granted int64                     // units leased beside the request
}

// parseReply splits a reply into the results of n requests with the given
// numbers of windows.
func parseReply(v any, windows func(i int) int, out []result) error {
	vals, ok := v.([]any)
	if !ok || len(vals) < 2 {
		return fmt.Errorf("%w: %T", ErrBadReply, v)
	}
	sec, ok1 := vals[0].(int64)
	usec, ok2 := vals[1].(int64)
	if !ok1 || !ok2 {
		return fmt.Errorf("%w: time %v %v", ErrBadReply, vals[0], vals[1])
	}
	j := 2
	for i := range out {
		n := windows(i)
		if j+2+n > len(vals) {
			return fmt.Errorf("%w: %d values for %d requests", ErrBadReply, len(vals), len(out))
		}
		r := &out[i]
		a, ok1 := vals[j].(int64)
		at, ok2 := vals[j+1].(int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("%w: request %d: %v %v", ErrBadReply, i, vals[j], vals[j+1])
		}
		r.allowed, r.at, r.sec, r.usec, r.granted = a >= 1, at, sec, usec, max(0, a-1)
		for w := range n {
			c, ok := vals[j+2+w].(int64)
			if !ok {
				return fmt.Errorf("%w: request %d window %d: %v", ErrBadReply, i, w, vals[j+2+w])
			}
			r.counts[w] = c
		}
		j += 2 + n
	}
	if j != len(vals) {
		return fmt.Errorf("%w: %d values left over", ErrBadReply, len(vals)-j)
	}
	return nil
}

// decide rebuilds the Decision from what the script found, with
// limiter.Decide itself, so that Redis and the in-memory store apply one
// rule; it returns the states after the request and reports a script whose
// verdict disagrees.
func (c *config) decide(req *limiter.Request, r *result) ([limiter.MaxWindows]limiter.State, limiter.Decision, time.Time, error) {
	p := req.Policy
	now := req.Now
	if c.clock == ServerClock {
		if r.at == r.sec*1000+r.usec/1000 {
			now = time.Unix(r.sec, r.usec*1000)
		} else {
			now = time.UnixMilli(r.at)
		}
	}
	var prior [limiter.MaxWindows]limiter.State
	ms := now.UnixMilli()
	for i := range p.NumRates() {
		id, _, _ := limiter.WindowID(ms, p.Rate(i).Window.Milliseconds())
		prior[i] = limiter.State{Window: id, Count: r.counts[i]}
	}
	next, d := limiter.Decide(p, prior, now, req.Cost)
	if d.Allowed != r.allowed {
		return next, d, now, fmt.Errorf("%w: script allowed=%v, Decide allowed=%v (counts %v)",
			ErrBadReply, r.allowed, d.Allowed, r.counts[:p.NumRates()])
	}
	if req.Peek {
		next = prior
	}
	return next, d, now, nil
}
