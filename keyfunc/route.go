package keyfunc

import (
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// RoutePattern returns a Func that keys a request by the pattern of the
// route that matched it, so that /users/1 and /users/2 share the bucket
// "route:/users/{id}". It reads chi's pattern
// (chi.RouteContext(ctx).RoutePattern()) when chi routed the request, and
// otherwise the standard library's r.Pattern, which ServeMux (Go 1.22+)
// sets and which may carry a method and host ("route:GET /users/{id}").
//
// The pattern is known only once routing has matched the route: in chi,
// install the limiter with r.With or inside r.Group/r.Route on the route,
// not with r.Use on the root router, where the pattern is still empty; with
// ServeMux, wrap the handler given to mux.Handle. An empty pattern yields
// an error wrapping ErrMisconfigured and ErrNoKey, never a key shared by
// every route: no request can have a pattern there, so the middleware
// answers 500 and reports the mistake to its observer.
//
// A route pattern alone makes one budget for all clients of a route; Join
// it with a client key for a per-client, per-route budget.
func RoutePattern() Func {
	return func(r *http.Request) (string, error) {
		p := ""
		if rc := chi.RouteContext(r.Context()); rc != nil {
			p = rc.RoutePattern()
		}
		if p == "" {
			p = r.Pattern
		}
		if p == "" {
			return "", errNoRoute
		}
		return bound("route:"+p, DefaultMaxKeyLen, false), nil
	}
}

// errNoRoute is one value: a misconfigured server meets it on every
// request.
var errNoRoute = fmt.Errorf("%w: %w: no route pattern: the limiter runs before routing (chi: install it with r.With or inside r.Route or r.Group, not r.Use on the root router; ServeMux: wrap the handler given to mux.Handle)", ErrMisconfigured, ErrNoKey)
