package redisstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// Settling in Redis (limiter.Settler). Each settle is one atomic run of
// settle.lua, batched in rounds as decisions are (round.go), on every
// kind of client, through the same per-server breakers, sent at most
// once by go-redis (call.go). A settle carries a token this store drew
// (its random id and a counter, as a slot's: unique across replicas),
// and the script keeps a marker of it, in the client key's hash tag, for
// settleMarkerTTL: a settle whose marker is there changes nothing. So
// when a call's reply is lost on its way back (the connection failed
// after Redis ran it), the store sends it once more, the same token,
// within its timeout, and the settle is applied once whichever of the
// two ran.

//go:embed settle.lua
var settleSource string

// settleHash is settle.lua's SHA-1, which EVALSHA names it by.
var settleHash = redis.NewScript(settleSource).Hash()

// settleMarkerTTL is how long a settle's marker lives (at least; see
// markerTTL): the store sends a settle again only within its timeout of
// the first call (100ms by default), and a minute leaves room besides for
// a first call that reaches Redis after its second (held in a proxy's
// buffers, queued behind a slow script), which must find the marker too.
// A marker is one key per settle that charged or returned units, for a
// minute: about 220 bytes of Redis memory with a 46-byte client key
// (docs/redis.md), so 13 MB at a thousand settles a second.
const settleMarkerTTL = time.Minute

// markerTTL returns how long a settle's marker lives: settleMarkerTTL, or
// twice the timeout when that is longer, so that a resend, sent within
// the timeout, always finds it.
func (c *config) markerTTL() time.Duration { return max(settleMarkerTTL, 2*c.timeout) }

// A settleOp is a settle call's part of a call: its marker key, what to
// charge (delta > 0) or return (delta < 0), and when the admission was
// decided (ms), which names the windows a return goes to.
type settleOp struct {
	marker string
	delta  int64
	at     int64
}

// markerKey returns the Redis key of a settle's marker: in the client
// key's hash tag, so in the slot of the windows it settles. A count's
// key never has this form (a policy's name holds no ':'): its part after
// the name is a window's length (digits) or a calendar rate's
// period@zone, never a token, which holds a '.' and no '@'; a slot key
// has no part after its cap's name but "inflight".
func markerKey(prefix, key, token string) string {
	return prefix + "{" + tag(key) + "}:settle:" + token
}

// Settle charges actual − req.Cost to the windows current at the
// settle, or returns the difference to the windows d charged that are
// still current (see limiter.Settler): req.Now says which on the
// limiter's clock, Redis's TIME with WithServerClock. A charge is never
// refused, and may take the key past its limit (into debt): this replica
// then refuses it at once (a charge ends its lease of the key as it is
// sent and again as it returns, so that no lease granted from the counts
// before it survives it; the unspent units go back, and its over-limit
// cache forgets the key), and every other replica within a second (what
// their leases and caches hold is at most that old). A return of a
// request decided before a Reset returns nothing (see Reset). An actual
// cost equal to the reservation, a refusal and a decision charged to
// nothing (WithFailOpen's) settle nothing. A bad actual cost is an error
// wrapping limiter.ErrInvalidCost, and nothing is sent.
//
// With leases, a return goes first to this replica's lease, as much as
// it spent in d's windows (those units were charged in Redis at the
// grant), with no round trip; a charge, and the rest of a return, go to
// Redis in one atomic script call shared with the settles queued beside
// it, bounded by the store's timeout and ctx. A decision WithFailLocal's
// fallback made is settled to it. This store's over-limit cache forgets
// the key; other replicas obey the settle within a second.
//
// A settle is applied at most once: when a call's reply is lost (the
// connection failed after Redis may have run it), the store sends it
// once more within its timeout, and Redis, which keeps a marker of each
// settle for a minute, applies it once. Settle itself is no idempotent
// call: each call is one more settle.
//
// An error is the settle's, wrapped, and named by its Reason method as a
// decision's cause is (permission_denied, out_of_memory, timeout, ...):
// the failure policy does not apply, so WithFailOpen and WithFailLocal
// make no failed settle succeed, and the middlewares report the error.
// A settle that failed may have been applied, once.
func (s *Store) Settle(ctx context.Context, req limiter.Request, d limiter.Decision, actual int64) error {
	if err := s.check(&req); err != nil {
		return err
	}
	if actual < 0 || actual > limiter.MaxLimit {
		return fmt.Errorf("%w: actual cost %d must be in [0, %d]", limiter.ErrInvalidCost, actual, limiter.MaxLimit)
	}
	// Redis's decisions carry req.Policy itself; the fallback's, a policy
	// of its own (fallbackPolicy), as for Refund.
	if s.fallback != nil && d.Policy != nil && d.Policy != req.Policy {
		fr := req
		fr.Policy = d.Policy
		return s.fallback.Settle(ctx, fr, d, actual)
	}
	if ok, err := limiter.Refundable(d, req.Policy); !ok {
		return err
	}
	op := settleOp{delta: actual - req.Cost, at: d.DecidedAt().UnixMilli()}
	if op.delta < 0 {
		back := limiter.Request{Key: req.Key, Policy: req.Policy, Now: req.Now, Cost: -op.delta}
		op.delta += s.leases.refund(&back, &d)
	}
	if op.delta == 0 || op.delta < 0 && s.cfg.clock == appClock && !s.anyCurrent(&req, op.at) {
		return nil
	}
	var left leftover
	if op.delta > 0 {
		// A charge makes this replica's view of the counts stale: its
		// lease ends, whatever the settle's outcome, so that a key taken
		// into debt is never admitted from it; what it held goes back.
		left = s.leases.end(req.Policy, req.Key)
	}
	op.marker = markerKey(s.cfg.prefix, req.Key, s.id+strconv.FormatUint(s.tokens.Add(1), 36))
	r, err := s.settle(ctx, &req, op)
	// Forgotten whatever the outcome: a settle that failed may have been
	// applied.
	s.cache.forget(req.Policy, req.Key)
	var late leftover
	if op.delta > 0 {
		// A decision that set out since the lease ended may have leased
		// from the counts before the charge (its script ran before the
		// settle's): end the lease again, which also keeps out any
		// grant still in flight.
		late = s.leases.end(req.Policy, req.Key)
	}
	for _, l := range []leftover{left, late} {
		if l.units > 0 || l.older > 0 {
			s.giveBack(ctx, &req, l, time.Now().Add(s.cfg.timeout))
		}
	}
	switch {
	case err == nil:
		s.reportCorrupt(&req, &r)
		return nil
	case errors.Is(err, limiter.ErrClosed):
		return err
	case errors.Is(err, ErrBadReply), errors.Is(err, ErrClockSkew):
		return fmt.Errorf("redisstore: settle: %w", err)
	}
	return fmt.Errorf("redisstore: settle: %w", named(err))
}

var _ limiter.Settler = (*Store)(nil)

// anyCurrent reports whether some window of req's policy that held at
// (ms) still holds req.Now, on the limiter's clock: only those get
// anything back.
func (s *Store) anyCurrent(req *limiter.Request, at int64) bool {
	pk := s.keys.get(req.Policy)
	now := req.Now.UnixMilli()
	for i := range req.Policy.NumRates() {
		charged, _, _ := pk.window(i, at)
		if id, _, _ := pk.window(i, now); id == charged {
			return true
		}
	}
	return false
}

// settle sends op for req, due within the store's timeout, and once more
// with the same marker when the first call's reply was lost (lostReply),
// or (WithServerClock) when Redis's TIME lay outside the calendar
// windows sent, around the replica's clock: nothing was applied then,
// and the call goes again around Redis's, as Take's does.
func (s *Store) settle(ctx context.Context, req *limiter.Request, op settleOp) (result, error) {
	deadline := time.Now().Add(s.cfg.timeout)
	r, err := s.settleBatch.doSettle(ctx, req, op, deadline)
	// Once more if the rounds would still send it: they drop a call
	// with less than a quarter of the timeout left (batcher.send).
	if err != nil && lostReply(err) && ended(ctx) == nil && time.Until(deadline) > s.cfg.timeout/4 {
		var again error
		if r, again = s.settleBatch.doSettle(ctx, req, op, deadline); again == nil || !errors.Is(again, context.DeadlineExceeded) {
			err = again // else the first call's error says why
		}
	}
	if err == nil && s.cfg.clock == serverClock && s.learnSkew(req.Now, &r) && r.offClock {
		r, err = s.settleBatch.doSettle(ctx, req, op, deadline)
	}
	if err == nil && r.offClock {
		err = clockSkew(req.Now, r)
	}
	return r, err
}

// lostReply reports whether err, a failed settle call, may have lost its
// reply after Redis ran the script: the connection failed (reset, closed,
// refused). An answer (an error reply, a reply of the wrong shape) is
// no lost reply; nor is a breaker that sent nothing, a closed store, or
// time run out, which leaves none for another call.
func lostReply(err error) bool {
	var (
		re redis.Error
		ne net.Error
	)
	switch {
	case errors.As(err, &re), errors.Is(err, ErrBadReply), errors.Is(err, ErrCircuitOpen),
		errors.Is(err, limiter.ErrClosed), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return false
	case errors.As(err, &ne) && ne.Timeout():
		return false
	}
	return true
}

// settleScript settles admissions with settle.lua.
type settleScript struct{ s *Store }

// keys appends the keys of c's windows (on the limiter's clock, those of
// the settle's instant: a return goes only to windows that still hold
// it, whose keys they are), its marker, and its windows' reset marks.
func (t settleScript) keys(dst []string, c *call) ([]string, int) {
	s := t.s
	n := c.req.Policy.NumRates()
	pk := s.keys.get(c.req.Policy)
	dst = appendKeys(dst, s.cfg.prefix, c.req.Key, pk, n, s.cfg.clock, c.req.Now.UnixMilli())
	dst = append(dst, c.settle.marker)
	return appendResetMarks(dst, s.cfg.prefix, c.req.Key, pk, n), 2*n + 1
}

// args appends settle.lua's arguments for calls (see its header): per
// request its windows, its delta, and per window what the clock and the
// delta's sign need. A calendar rate's windows under Redis's clock are
// sent around the replica's estimate of TIME (its clock plus skew), as
// appendArgs sends a decision's.
func (t settleScript) args(dst []any, calls []*call, argKeys []string, _ *roundBuf) []any {
	s := t.s
	server := s.cfg.clock == serverClock
	clock := "a"
	if server {
		clock = "s"
	}
	margin := s.cfg.margin.Milliseconds()
	dst = append(dst, clock, margin, len(calls), len(argKeys), s.cfg.markerTTL().Milliseconds())
	for _, k := range argKeys {
		dst = append(dst, k)
	}
	skew := s.skew.Load()
	for _, c := range calls {
		pk := s.keys.get(c.req.Policy)
		n := c.req.Policy.NumRates()
		now, delta := c.req.Now.UnixMilli(), c.settle.delta
		dst = append(dst, n, delta)
		if delta < 0 {
			dst = append(dst, c.settle.at) // the reset marks are read against it
		}
		for i := range n {
			switch {
			case server && delta > 0:
				if pk.cal[i] == nil {
					dst = append(dst, pk.wms[i])
					continue
				}
				sp := pk.cal[i].Around(now + skew)
				dst = append(dst, pk.rates[2*i+1], sp.Prev, sp.Start, sp.Next, sp.End)
			case server:
				id, start, end := pk.window(i, c.settle.at)
				dst = append(dst, strconv.FormatInt(id, 10), start, end)
			case delta > 0:
				_, _, end := pk.window(i, now)
				dst = append(dst, end-now+margin)
			default:
				charged, _, _ := pk.window(i, c.settle.at)
				id, _, _ := pk.window(i, now)
				dst = append(dst, b2i(id == charged))
			}
		}
	}
	return dst
}

// parse reads settle.lua's reply, laid out as take.lua's (parseReply):
// per request a verdict (1 settled, allowed; 0 settled already; -1 only
// in a node call; -2 only with Redis's clock) and the count of each
// window after it (-1 when corrupt); nwin counts the marker and the
// reset marks beside the windows.
func (t settleScript) parse(sc *scriptCall, node bool) error {
	server := t.s.cfg.clock == serverClock
	if err := parseReply(&sc.reply, func(i int) int { return (sc.nwin[i] - 1) / 2 }, sc.res, node, server); err != nil {
		return err
	}
	for i := range sc.res {
		if r := &sc.res[i]; r.granted != 0 || r.at != r.sec*1000+r.usec/1000 || r.offClock && !server {
			return fmt.Errorf("%w: settle verdict for request %d: granted %d, at %d, off the clock %v",
				ErrBadReply, i, r.granted, r.at, r.offClock)
		}
	}
	return nil
}

func (settleScript) source() string { return settleSource }
func (settleScript) hash() string   { return settleHash }
