package keyfunc

import (
	"fmt"
	"net/http"
)

// RoutePattern returns a Func that keys a request by the pattern of the
// route that matched it, so that /users/1 and /users/2 share the bucket
// "route:/users/{id}". It reads r.Pattern, which the standard library's
// ServeMux (Go 1.22+) sets, with a method and host when the pattern has
// them ("route:GET /users/{id}"), and which chi sets too, to the whole
// pattern of nested routers ("route:/api/users/{id}"; v5.5.0, the version
// this module requires, does). So keyfunc imports no router.
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
// it with a client key for a per-client, per-route budget. RoutePattern
// takes no argument and cannot fail, so it returns the Func alone.
func RoutePattern() Func {
	return routePattern
}

func routePattern(r *http.Request) (string, error) {
	if r.Pattern == "" {
		return "", errNoRoute
	}
	return bound("route:"+r.Pattern, defaultMaxKeyLen, false), nil
}

// errNoRoute is one value: a misconfigured server meets it on every
// request.
var errNoRoute = fmt.Errorf("%w: %w: no route pattern: the limiter runs before routing (chi: install it with r.With or inside r.Route or r.Group, not r.Use on the root router; ServeMux: wrap the handler given to mux.Handle)", ErrMisconfigured, ErrNoKey)
