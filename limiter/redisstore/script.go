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

// takeHash is the script's SHA-1, which EVALSHA names it by.
var takeHash = redis.NewScript(takeSource).Hash()

// Arguments of the script, before the requests (see take.lua).
const (
	headerArgs  = 4 // clock, margin, number of requests, keys in ARGV
	requestArgs = 5 // now ms, cost, peek, want, number of windows
)

// header returns the script's leading arguments for n requests, with nk
// keys passed in the arguments (a node call) or none.
func (c *config) header(n, nk int) [headerArgs]any {
	clock := "a"
	if c.clock == ServerClock {
		clock = "s"
	}
	return [headerArgs]any{clock, c.margin.Milliseconds(), n, nk}
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
	// elsewhere: a node call found the request's keys not on its node
	// (take.lua); nothing was charged.
	elsewhere bool
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
