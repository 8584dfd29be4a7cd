package middleware

import (
	"context"
	"fmt"
	"net/http"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// Report adds cost to what the request of ctx has cost in unit, for the
// limits metered in unit (WithReported, here and in grpclimit) of every
// middleware and interceptor around the handler: the tokens a model's
// answer used, read from its usage. Each such limit is settled at the
// total reported once the handler has returned, or at its reservation if
// nothing was reported. Call it once with the total, or as the response
// goes (per streamed chunk); from any goroutine while the handler runs.
// unit is the limit's policy's (limiter.Policy.Unit: "acme-tokens").
//
// It reports whether a limit took the cost: false, and nothing is
// counted, for a cost below zero or above limiter.MaxLimit (or one that
// would take the request's total past it), for a request with no charge
// to settle in unit (a misspelt unit, a handler outside the middleware,
// an exempt request, a limit that failed open), and once the middleware
// has settled (a goroutine the handler left behind). A request
// WithCountIf refunds, by its status once the handler has returned, is
// charged nothing, whatever was reported.
func Report(ctx context.Context, unit string, cost int64) bool {
	return verdict.Report(ctx, unit, cost)
}

// A meteredRequest is what a request with limits to settle needs when a
// middleware around this one made its state (newState makes the same
// room in the state's allocation otherwise), in one allocation: the
// tally its handler reports to, which is the context of the request the
// handler gets, and a status recorder to count the bytes of its response
// (WithBytes).
type meteredRequest struct {
	tally verdict.Tally
	rec   statusRecorder
	req   http.Request
}

// newMeteredRequest returns the metered request of r, for limits
// reported in units, and the request the handler gets.
func newMeteredRequest(r *http.Request, units []string) (*meteredRequest, *http.Request) {
	mr := new(meteredRequest)
	mr.tally.Init(r.Context(), units)
	mr.req = *r.WithContext(&mr.tally)
	return mr, &mr.req
}

// meter makes rule i, added by WithReported or WithBytes, metered by m
// (verdict.Metered says what that asks of it); a rule with no key
// function of its own takes the middleware's.
func (c *config) meter(i int, m verdict.Meter) error {
	r := &c.rules[i]
	if err := c.limits.Meter(&r.rule, m); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	if r.key == nil {
		r.key = c.key
	}
	return nil
}
