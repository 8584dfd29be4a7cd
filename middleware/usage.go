package middleware

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A UsageHandler responds to a request with what the request's customer
// has used of every rate and in-flight cap of a middleware, under their
// plan and zone, as JSON: the endpoint GitHub's GET /rate_limit is, built
// from the middleware's own configuration (NewUsageHandler). The numbers
// are the ones the middleware's headers give: a request's
// X-RateLimit-Remaining is what the usage read after it says remains of
// the window that decided it.
//
// The answer is, with one resource per policy or cap name (limiter.Usage's
// JSON, windows in the policy's order):
//
//	{"plan": "pro", "zone": "Asia/Kolkata", "resources": {
//	  "api": {"policy": "api", "at": "2026-07-31T12:00:30Z", "windows": [
//	    {"window": "month@Asia/Kolkata", "limit": 100000, "used": 2, "remaining": 99998,
//	     "reset": "2026-07-31T18:30:00Z", "window_seconds": 2678400},
//	    {"window": "1m0s", "limit": 5, "used": 2, "remaining": 3,
//	     "reset": "2026-07-31T12:01:00Z", "window_seconds": 60}]},
//	  "exports": {"policy": "exports", "at": "2026-07-31T12:00:30Z",
//	    "in_flight": {"limit": 2, "used": 0, "remaining": 2}}}}
//
// plan and zone are empty without WithPlans. A request whose key cannot
// be resolved, or whose plan cannot be looked up or apply, gets what the
// middleware would answer it (400, 500: the key error and error
// handlers, the observer told); a store that cannot read the usage, the
// error handler's answer (500), whatever WithFailOpen says: a usage
// nobody could read is no usage to report. Reading charges nothing.
// The zero UsageHandler is not usable.
type UsageHandler struct {
	cfg *config
}

// UsageReport is a customer's usage as a UsageHandler reports it.
type UsageReport struct {
	Plan      string                   `json:"plan"`      // the plan's Name (WithPlans), or ""
	Zone      string                   `json:"zone"`      // the zone the lookup gave, or ""
	Resources map[string]limiter.Usage `json:"resources"` // by policy or cap name
}

// usageReader is a limiter that reads a key's usage without charging:
// *limiter.Limiter, and every limiter a plan derives.
type usageReader interface {
	Usage(ctx context.Context, key string) (limiter.Usage, error)
}

// NewUsageHandler returns the usage endpoint of the middleware New(l,
// opts...) returns (l nil: InFlight's, caps alone): give it the same
// limiter and options, so that it keys, looks plans up and reads the
// limits exactly as the middleware does. Configuration errors are New's,
// and a limiter without a Usage method (every *limiter.Limiter has one)
// or two limits of one name, which would be one resource, wrap
// ErrInvalidOption.
func NewUsageHandler(l Limiter, opts ...Option) (*UsageHandler, error) {
	if l != nil {
		if err := verdict.Check(l); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidOption, err)
		}
	}
	c, err := configure(l, opts)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i, r := range c.rules {
		name := r.lim.Policy().Name()
		if _, ok := r.lim.(usageReader); !ok {
			return nil, fmt.Errorf("%w: NewUsageHandler: limiter %d (policy %q) is a %T, which has no Usage method", ErrInvalidOption, i, name, r.lim)
		}
		if seen[name] {
			return nil, fmt.Errorf("%w: NewUsageHandler: two limits named %q would be one resource", ErrInvalidOption, name)
		}
		seen[name] = true
	}
	for _, f := range c.capLimits {
		name := f.Policy().Name()
		if seen[name] {
			return nil, fmt.Errorf("%w: NewUsageHandler: two limits named %q would be one resource", ErrInvalidOption, name)
		}
		seen[name] = true
	}
	return &UsageHandler{cfg: c}, nil
}

// ServeHTTP answers r with its customer's usage as JSON (see
// UsageHandler), or with the middleware's answer to a request it could
// not identify.
func (u *UsageHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rep, answered, err := u.report(w, r)
	if answered {
		return
	}
	if err != nil {
		u.cfg.onError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(rep)
}

// Report returns r's customer's usage, as ServeHTTP writes it. Its
// errors are why there is none: a key that could not be resolved
// (wrapping keyfunc's errors), a plan lookup that failed or cannot
// apply, a store that could not read. The observer sees what it would
// see of ServeHTTP.
func (u *UsageHandler) Report(r *http.Request) (UsageReport, error) {
	rep, answered, err := u.report(discard{}, r)
	if answered {
		return UsageReport{}, err
	}
	return rep, err
}

// report reads r's usage; answered reports that w has been answered as
// the middleware would (a key or plan that failed), err then saying why.
func (u *UsageHandler) report(w http.ResponseWriter, r *http.Request) (rep UsageReport, answered bool, err error) {
	c := *u.cfg // this request's: a lookup that records the plan, answers that record why
	if c.lookup != nil {
		lookup := c.lookup
		c.lookup = func(r *http.Request) (*limiter.Plan, string, error) {
			p, zone, err := lookup(r)
			if p != nil {
				rep.Plan = p.Name
			}
			rep.Zone = zone
			return p, zone, err
		}
	}
	onKeyError, onError := c.onKeyError, c.onError
	c.onKeyError = func(w http.ResponseWriter, r *http.Request, e error) { err = e; onKeyError(w, r, e) }
	c.onError = func(w http.ResponseWriter, r *http.Request, e error) { err = e; onError(w, r, e) }
	h := &handler{cfg: &c}
	var (
		l      verdict.Life
		own    ownKey
		failed unidentified
	)
	if !h.identify(r, &l, &own, &failed) {
		l.Unserved()
		h.keyFailed(w, r, &failed)
		return rep, true, err
	}
	rep.Resources = make(map[string]limiter.Usage, len(l.Rules)+len(l.Caps))
	ctx := r.Context()
	for i, rule := range l.Rules {
		ur, ok := rule.Lim.(usageReader)
		if !ok { // a plan that could not be looked up stands in failing
			return rep, false, fmt.Errorf("middleware: usage of policy %q: %w", rule.Lim.Policy().Name(), planLookupErr(rule.Lim))
		}
		us, err := ur.Usage(ctx, l.Keys[i])
		if err != nil {
			return rep, false, fmt.Errorf("middleware: usage of policy %q: %w", rule.Lim.Policy().Name(), err)
		}
		rep.Resources[us.Policy.Name()] = us
	}
	for i, f := range l.Caps {
		us, err := f.Usage(ctx, l.CapKeys[i])
		if err != nil {
			return rep, false, fmt.Errorf("middleware: usage of in-flight cap %q: %w", f.Policy().Name(), err)
		}
		rep.Resources[us.Policy.Name()] = us
	}
	return rep, false, nil
}

// planLookupErr is the error a failing stand-in (verdict.Unavailable)
// carries.
func planLookupErr(l verdict.RuleLimiter) error {
	if u, ok := l.(*verdict.Unavailable); ok {
		return u.Err
	}
	return fmt.Errorf("%T has no Usage method", l)
}

// discard is a ResponseWriter that keeps nothing, for Report.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}
