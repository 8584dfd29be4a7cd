package middleware

import (
	"context"
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// maxCaps is the most in-flight caps one middleware applies
// (WithInFlight): a cap per client and one for everyone, say.
const maxCaps = 2

// A capRule is one in-flight cap and the key it is applied to.
type capRule struct {
	f   *limiter.InFlight
	key keyfunc.Func // nil: the middleware's key, rule 0's, resolved once
}

// heldCaps are the slots one middleware holds for a request, and what
// the headers and the observer need of them, in the order the caps were
// asked, the first n with a cap (see len). The innermost middleware's is
// in the request's state, linked to the outer ones', so that every
// middleware's headers list every cap. It keeps no count: a cappedState
// then fits its size class (see reqState).
type heldCaps struct {
	prev *heldCaps
	caps [maxCaps]heldCap
}

// len returns how many caps hc holds a decision of.
func (hc *heldCaps) len() int {
	n := 0
	for n < maxCaps && hc.caps[n].f != nil {
		n++
	}
	return n
}

// A heldCap is one cap's decision for the request.
type heldCap struct {
	f         *limiter.InFlight
	key       string
	release   func()          // nil once given back, or for a shadow refusal
	policy    *limiter.Policy // the decision's (a store's reduced cap while it degrades)
	remaining int64
	at        int64 // the decision's instant, Unix ns by the cap's clock
}

// decision returns the cap's decision as the headers and the observer
// see it.
func (hc *heldCap) decision() limiter.Decision {
	return limiter.Dated(limiter.Decision{Allowed: true, Limit: hc.policy.MaxInFlight(), Remaining: hc.remaining, Policy: hc.policy}, time.Unix(0, hc.at))
}

// capKeys resolves the key of every cap, before any limiter is asked, as
// the rules' keys are; false when it has answered the request.
func (h *handler) capKeys(w http.ResponseWriter, r *http.Request, keys *[maxLimiters]string, capKeys *[maxCaps]string) bool {
	c := h.cfg
	for i := range c.caps {
		if c.caps[i].key == nil {
			capKeys[i] = keys[0]
			continue
		}
		k, err := c.caps[i].key(r)
		if err == nil && k == "" {
			err = errEmptyKey
		}
		if err != nil {
			h.keyFailed(w, r, c.caps[i].f.Policy(), err)
			return false
		}
		capKeys[i] = k
	}
	return true
}

// acquire asks every cap for a slot, in order, for a request the rates
// have admitted (or that failed open). applied[:n] are the policies of
// the rates, which a refusal's headers list with the caps'. ctx is the
// request's before the middleware; spare is room for the slots in the
// request's state, or nil. It returns the slots held (nil for none) and
// whether it has answered the request: a cap refused (429; the rates
// refunded and the slots taken given back), failed (the error handler)
// or found the client gone (499).
//
// The caps stay out of the state's list of policies: the headers add
// them (writeCaps), and a request under one rate and one cap allocates
// no list.
func (h *handler) acquire(w http.ResponseWriter, r *http.Request, ctx context.Context, capKeys *[maxCaps]string, keys *[maxLimiters]string, cost int64,
	charged *charges, applied *[maxLimiters + maxCaps]*limiter.Policy, n int, spare *heldCaps) (held *heldCaps, answered bool) {
	c := h.cfg
	for i := range c.caps {
		f := c.caps[i].f
		var (
			clk  limiter.Clock
			at   time.Time
			took time.Duration
		)
		if c.observe != nil {
			clk = f.Clock()
			at = clk.Now()
		}
		d, release, err := f.Acquire(ctx, capKeys[i])
		outcome := outcomeOf(ctx, d, err, c.shadow)
		if c.observe != nil {
			took = clk.Now().Sub(at)
			c.observe(Event{
				Request: r, Key: capKeys[i], Policy: f.Policy(), Outcome: outcome,
				Decision: d, Err: err, FailOpen: outcome == Error && c.failOpen, Duration: took,
			})
		}
		switch outcome {
		case Canceled:
			h.release(r, held)
			clientGone(w)
			return nil, true
		case Error:
			if c.failOpen {
				continue
			}
			h.release(r, held)
			c.onError(w, r, err)
			return nil, true
		case Denied, ShadowDenied:
			// Enforcing answers the request here: nothing it took
			// stays taken, and no later cap is asked. Shadow mode
			// counts as enforcing would, and lets the request through
			// holding nothing.
			h.release(r, held)
			h.refund(r, ctx, keys, cost, charged)
			applied[n] = d.Policy
			n++
			if outcome == ShadowDenied {
				return held.add(spare, f, capKeys[i], nil, &d), false
			}
			refused := d // a copy: only a refusal moves a Decision to the heap
			c.deny(w, r, &refused, stateFrom(ctx).with(applied[:n])...)
			return nil, true
		}
		held = held.add(spare, f, capKeys[i], release, &d)
		applied[n] = d.Policy
		n++
	}
	return held, false
}

// add records cap f's decision d (release nil for a shadow refusal),
// into spare on the first when there is one, else into a heldCaps of its
// own.
func (hc *heldCaps) add(spare *heldCaps, f *limiter.InFlight, key string, release func(), d *limiter.Decision) *heldCaps {
	if hc == nil {
		if hc = spare; hc == nil {
			hc = new(heldCaps)
		}
	}
	hc.caps[hc.len()] = heldCap{f: f, key: key, release: release, policy: d.Policy, remaining: d.Remaining, at: d.DecidedAt().UnixNano()}
	return hc
}

// release gives back every slot hc holds, once, last taken first, and
// tells the observer of each.
func (h *handler) release(r *http.Request, hc *heldCaps) {
	if hc == nil {
		return
	}
	for i := hc.len() - 1; i >= 0; i-- {
		cp := &hc.caps[i]
		if cp.release == nil {
			continue
		}
		cp.release()
		cp.release = nil
		if h.cfg.observe != nil {
			h.cfg.observe(Event{Request: r, Key: cp.key, Policy: cp.f.Policy(), Outcome: Released,
				Decision: cp.decision(), Duration: time.Duration(cp.f.Clock().Now().UnixNano() - cp.at)})
		}
	}
}

// serveHolding calls the handler for a request that holds slots, as
// ServeHTTP would without them, and gives them back when it returns by
// any path, a panic included.
func (h *handler) serveHolding(w http.ResponseWriter, r *http.Request, rec *statusRecorder, ctx context.Context,
	keys *[maxLimiters]string, cost int64, charged *charges, held *heldCaps, decided bool) {
	defer h.release(r, held)
	if decided && h.cfg.countIf != nil {
		h.serveCounted(w, r, rec, ctx, keys, cost, charged)
		return
	}
	h.next.ServeHTTP(w, r)
}

// writeCaps adds every cap of hc and the middlewares around it to the
// draft headers, the outermost first.
func writeCaps(hw *headers.Writer, h http.Header, hc *heldCaps) {
	if hc.prev != nil {
		writeCaps(hw, h, hc.prev)
	}
	var ds [maxCaps]limiter.Decision
	var ps [maxCaps]*limiter.Decision
	n := hc.len()
	for i := range n {
		ds[i] = hc.caps[i].decision()
		ps[i] = &ds[i]
	}
	hw.WriteInFlight(h, ps[:n]...)
}
