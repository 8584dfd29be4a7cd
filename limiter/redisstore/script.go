package redisstore

import (
	_ "embed"
	"fmt"
	"slices"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

//go:embed take.lua
var takeSource string

// takeHash is the script's SHA-1, which EVALSHA names it by.
var takeHash = redis.NewScript(takeSource).Hash()

// A script is what a batcher's rounds send and how its reply reads: the
// decisions' take.lua (takeScript), the in-flight slots' inflight.lua
// (slotScript) or the settles' settle.lua (settleScript). The round
// loop, the routing, the breakers and the accounting are the same for
// each (round.go).
type script interface {
	// keys appends the Redis keys of c's request, and says how many.
	keys(dst []string, c *call) ([]string, int)
	// args appends the arguments of calls after the command and its
	// declared keys; argKeys holds a node call's keys, which then go
	// among the arguments (none otherwise).
	args(dst []any, calls []*call, argKeys []string, buf *roundBuf) []any
	// parse reads sc's reply into sc.res; node: a node call's, which
	// may answer that a request's keys are elsewhere.
	parse(sc *scriptCall, node bool) error
	source() string
	hash() string
}

// takeScript decides requests with take.lua.
type takeScript struct{ s *Store }

func (t takeScript) keys(dst []string, c *call) ([]string, int) {
	s := t.s
	n := c.req.Policy.NumRates()
	return appendKeys(dst, s.cfg.prefix, c.req.Key, s.keys.get(c.req.Policy), n, s.cfg.clock, c.req.Now.UnixMilli()), n
}

func (t takeScript) args(dst []any, calls []*call, argKeys []string, buf *roundBuf) []any {
	dst, buf.pols = t.s.cfg.appendArgs(dst, calls, &t.s.keys, argKeys, buf.pols, t.s.skew.Load())
	return dst
}

func (t takeScript) parse(sc *scriptCall, node bool) error {
	return parseReply(&sc.reply, func(i int) int { return sc.nwin[i] }, sc.res, node, t.s.cfg.clock == serverClock)
}

func (takeScript) source() string { return takeSource }
func (takeScript) hash() string   { return takeHash }

// appendArgs appends the script's arguments for calls, after the command
// and its declared keys (see take.lua): the header, with the cost and
// (the application's clock) the instant of every request when they all
// share them; each distinct policy of calls once, its windows' limits and
// lengths; argKeys, the keys of a node call (none otherwise); then each
// request's own arguments, as few as it needs. pols is scratch for the
// policies, returned for reuse. skew is Redis's clock less this
// replica's, as last learned (serverClock): the calendar windows sent
// are those around the replica's estimate of Redis's clock.
func (c *config) appendArgs(dst []any, calls []*call, kc *keyCache, argKeys []string, pols []*limiter.Policy, skew int64) ([]any, []*limiter.Policy) {
	clock := "a"
	if c.clock == serverClock {
		clock = "s"
	}
	// A linear search: a call's policies are few (one, usually); a
	// resolver that builds one per request makes this quadratic in the
	// batch, at most 64 by default.
	pols = pols[:0]
	for _, cl := range calls {
		if !slices.Contains(pols, cl.req.Policy) {
			pols = append(pols, cl.req.Policy)
		}
	}
	// One cost for the call when every request has it and none leases or
	// peeks, and (the application's clock) one instant when every request
	// has it: arguments a request then need not carry. Otherwise each
	// request sends its instant as an offset from the call's earliest,
	// base: a short number (under 256 ms, as the calls of one round
	// usually are, Go boxes it without allocating).
	cost, base := calls[0].req.Cost, calls[0].req.Now.UnixMilli()
	last := base
	for _, cl := range calls {
		if cost >= 0 && (cl.req.Cost != cost || cl.req.Peek || cl.want > 0) {
			cost = -1
		}
		ms := cl.req.Now.UnixMilli()
		base, last = min(base, ms), max(last, ms)
	}
	offsets := c.clock == appClock && last != base
	if c.clock == serverClock {
		base = 0
	}
	dst = append(dst, clock, c.margin.Milliseconds(), len(calls), len(argKeys), len(pols), cost, base, b2i(offsets))
	calendars := false // some policy of the call has a calendar rate
	for _, p := range pols {
		pk := kc.get(p)
		dst = append(dst, len(pk.rates)/2)
		dst = append(dst, pk.rates...)
		if pk.ncal > 0 {
			calendars = true
			if c.clock == serverClock {
				dst = appendSpans(dst, pk, firstNow(calls, p)+skew)
			}
		}
	}
	for _, k := range argKeys {
		dst = append(dst, k)
	}
	for _, cl := range calls {
		req := &cl.req
		if len(pols) > 1 {
			dst = append(dst, slices.Index(pols, req.Policy)+1)
		}
		if c.clock == appClock {
			ms := req.Now.UnixMilli()
			if offsets {
				dst = append(dst, ms-base)
			}
			if calendars {
				dst = appendEnds(dst, kc.get(req.Policy), ms)
			}
		}
		switch {
		case cost >= 0:
		case req.Peek:
			dst = append(dst, -1-req.Cost, -1)
		case cl.want > 0:
			dst = append(dst, -1-req.Cost, cl.want)
		default:
			dst = append(dst, req.Cost)
		}
	}
	return dst, pols
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// appendSpans appends, for each calendar rate of pk, the starts of the
// windows before, at and after now (ms) and the end of the last: the
// windows take.lua may place Redis's TIME in, when it decides by it.
func appendSpans(dst []any, pk *policyKeys, now int64) []any {
	for _, c := range pk.cal {
		if c != nil {
			sp := c.Around(now)
			dst = append(dst, sp.Prev, sp.Start, sp.Next, sp.End)
		}
	}
	return dst
}

// appendEnds appends the end of the window holding ms of each calendar
// rate of pk, for a request decided at ms by the application's clock.
func appendEnds(dst []any, pk *policyKeys, ms int64) []any {
	for i, c := range pk.cal {
		if c != nil {
			_, _, end := pk.window(i, ms)
			dst = append(dst, end)
		}
	}
	return dst
}

// firstNow returns the instant of the first of calls under p: the
// replica's clock, around which a policy's calendar windows are sent
// once per call.
func firstNow(calls []*call, p *limiter.Policy) int64 {
	for _, cl := range calls {
		if cl.req.Policy == p {
			return cl.req.Now.UnixMilli()
		}
	}
	return 0
}

// A result is what the script found for one request.
type result struct {
	allowed bool
	at      int64 // the instant decided at, ms (serverClock)
	sec     int64 // TIME (serverClock)
	usec    int64
	counts  [limiter.MaxWindows]int64 // before the request; -1 if corrupt
	granted int64                     // units leased beside the request
	// elsewhere: a node call found the request's keys not on its node
	// (take.lua); nothing was charged.
	elsewhere bool
	// offClock: Redis's TIME lay outside the calendar windows sent for
	// the request's policy (take.lua); nothing was charged.
	offClock bool
}

// decide rebuilds the Decision from what the script found, with
// limiter.Decide itself, so that Redis and the in-memory store apply one
// rule; it returns the states after the request and reports a script whose
// verdict disagrees.
func (c *config) decide(req *limiter.Request, r *result, kc *keyCache) ([limiter.MaxWindows]limiter.State, limiter.Decision, time.Time, error) {
	p := req.Policy
	now := req.Now
	if c.clock == serverClock {
		if r.at == r.sec*1000+r.usec/1000 {
			now = time.Unix(r.sec, r.usec*1000)
		} else {
			now = time.UnixMilli(r.at)
		}
	}
	var prior [limiter.MaxWindows]limiter.State
	ms := now.UnixMilli()
	pk := kc.get(p)
	for i := range p.NumRates() {
		id, _, _ := pk.window(i, ms)
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
