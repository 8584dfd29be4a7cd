package middleware

import (
	"context"
	"errors"
	"net/http"

	"github.com/fixedwindow/ratelimit/limiter"
)

// charges are the admissions one middleware's limiters charged a request,
// for WithCountIf to refund: the decision of each rule that charged, and
// the limiter that made it.
type charges struct {
	n    int
	rule [maxLimiters]int
	lim  [maxLimiters]Limiter
	d    [maxLimiters]limiter.Decision
}

func (c *charges) add(rule int, l Limiter, d *limiter.Decision) {
	c.rule[c.n], c.lim[c.n], c.d[c.n] = rule, l, *d
	c.n++
}

// errCannotRefund is what the observer is told of a charge made by a
// limiter WithResolver returned that has no Refund method.
var errCannotRefund = errors.New("middleware: the resolved limiter is no Refunder; the charge stays")

// serveCounted calls the handler with a ResponseWriter that records the
// status, then refunds every charge when the status is not one to count.
// A panic in the handler skips the refund: the request stays charged.
// rec is the recorder made with the request's state, or nil when an
// outer middleware made the state.
func (h *handler) serveCounted(w http.ResponseWriter, r *http.Request, rec *statusRecorder, ctx context.Context, keys *[maxLimiters]string, cost int64, charged *charges) {
	if outer, ok := w.(*statusRecorder); ok {
		// One recorder per request suffices: an inner middleware that
		// counts by status reads the one an outer middleware installed.
		rec = outer
	} else {
		if rec == nil {
			rec = new(statusRecorder)
		}
		rec.ResponseWriter = w
	}
	h.next.ServeHTTP(rec, r)
	status, known := rec.final()
	if !known || h.cfg.countIf(status) {
		return
	}
	h.refund(r, ctx, keys, cost, charged)
}

// refund returns every charge of charged, and tells the observer of
// each; charged is then empty, so nothing is returned twice.
func (h *handler) refund(r *http.Request, ctx context.Context, keys *[maxLimiters]string, cost int64, charged *charges) {
	// The handler has answered, or a cap refused; the client may be
	// gone, yet the charge must still be returned.
	rctx := context.WithoutCancel(ctx)
	for i := range charged.n {
		l, key := charged.lim[i], keys[charged.rule[i]]
		var err error
		if ref, ok := l.(Refunder); ok {
			err = ref.Refund(rctx, key, cost, charged.d[i])
		} else {
			err = errCannotRefund
		}
		if h.cfg.observe != nil {
			h.cfg.observe(Event{Request: r, Key: key, Policy: l.Policy(), Outcome: Refunded, Decision: charged.d[i], Err: err})
		}
	}
	charged.n = 0
}
