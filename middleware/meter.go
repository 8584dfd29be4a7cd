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
// has settled (a goroutine the handler left behind). A unit that no
// limit around the handler counts, under a middleware that meters
// others, is a misconfiguration: besides returning false, Report tells
// the observer of the innermost such middleware (Misconfigured). A
// handler under no metering middleware has no observer to tell. A request
// WithCountIf refunds, by its status once the handler has returned, is
// charged nothing, whatever was reported.
func Report(ctx context.Context, unit string, cost int64) bool {
	return verdict.Report(ctx, unit, cost)
}

// misreported is the error of a report in unit, which no limit around
// the handler counts: a door that counts units was told.
func misreported(unit string, units []string) error {
	return fmt.Errorf("%w: Report(ctx, %q, cost): no limit around the handler counts %q (this middleware's count %q)",
		ErrMisconfigured, unit, unit, units)
}

// A meter is what a request with limits to settle needs, from one
// middleware: the tally its handler reports to, which is the context of
// the request the handler gets, and a status recorder that counts the
// bytes of its response (WithBytes) and writes the headers at its first
// byte. newState makes one in the state's allocation for the outermost
// middleware that decides; newMeteredRequest for one inside.
type meter struct {
	tally verdict.Tally
	rec   statusRecorder
}

// A meteredRequest is a meter and the request the handler gets, in one
// allocation, for a middleware inside the one that made the state.
type meteredRequest struct {
	meter
	req http.Request
}

// newMeteredRequest returns the meter of r, for limits reported in
// units, and the request the handler gets.
func newMeteredRequest(r *http.Request, units *verdict.Units) (*meter, *http.Request) {
	mr := new(meteredRequest)
	mr.tally.Init(r.Context(), units)
	mr.req = *r.WithContext(&mr.tally)
	return &mr.meter, &mr.req
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
		r.key, r.own = c.key, true
	}
	return nil
}
