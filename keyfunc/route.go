package keyfunc

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
)

// RoutePattern returns a Func that keys a request by the full pattern of
// the route that will serve it, so that /api/v1/users/1 and
// /api/v1/users/2 share the bucket "route:/api/v1/users/{id}", and
// /api/v1/users/{id} and /api/v1/orders/{id} have a bucket each. It works
// wherever the middleware sits:
//
//   - In a chi router (r.Use on the root router, inside r.Route, r.Group
//     or a sub-router given to r.Mount, r.With), it asks the root router
//     which route the request's path and method will reach (chi's
//     Routes.Match), before or after routing alike, so the key
//     is the whole pattern of nested routers, never a mount's wildcard
//     ("route:/api/v1/*") shared by a subtree. A path that a middleware in
//     the root r.Use rewrote for routing (StripSlashes) is found as chi
//     will route it when the limiter is in the root r.Use too; below a
//     mount the request's URL path is looked up, so there a rewritten
//     path ("/users/1/" stripped) is found unmatched: put the limiter in
//     the root r.Use, after the rewriting middleware.
//   - Inside a ServeMux (the handler given to mux.Handle), it reads
//     r.Pattern, with a method and host when the pattern has them
//     ("route:GET /users/{id}").
//   - Around a ServeMux, the pattern is not known before the mux routes:
//     use ServeMuxPattern, which asks the mux.
//
// A request that no route serves (chi or the mux will answer 404 or 405)
// is keyed "route:(unmatched)", one bucket for all such requests, which
// no pattern can equal. A handler mounted in chi that is not a chi router
// is one route to chi: its requests share the mount's pattern
// ("route:/legacy/*"); install the limiter inside it to tell its routes
// apart.
//
// Where no router can say (no chi router above and no pattern, as when
// wrapping a ServeMux), the Func yields an error wrapping
// ErrMisconfigured and ErrNoKey, never a key shared by every route: the
// middleware answers 500 and reports the mistake to its observer, and the
// first such request writes one line to slog's default logger.
//
// A route pattern alone makes one budget for all clients of a route; Join
// it with a client key for a per-client, per-route budget. RoutePattern
// takes no argument and cannot fail, so it returns the Func alone.
func RoutePattern() Func {
	rt := &route{fn: "RoutePattern"}
	return rt.key
}

// Endpoint returns a Func that keys a request by its method and the full
// pattern of the route that will serve it: "route:GET /api/v1/users/{id}".
// It stands for httprate's KeyByEndpoint, which keys by the URL path, so
// that /users/1 and /users/2 were two budgets; here they are one, and GET
// and POST on the route a budget each. The pattern is found as
// RoutePattern finds it, with the same errors; a ServeMux pattern that
// carries its method ("GET /users/{id}") is used as it is. Where the
// pattern does not bound the method (a ServeMux pattern without one
// matches any), a method other than RFC 9110's eight and PATCH is keyed
// "*", so that a client cannot mint budgets by inventing methods.
func Endpoint() Func {
	rt := &route{fn: "Endpoint", method: true}
	return rt.key
}

// ServeMuxPattern returns a Func that keys a request by the pattern of the
// route of mux that will serve it, as mux.Handler reports it, so that a
// limiter wrapping the whole mux keys as RoutePattern does inside it
// ("route:GET /users/{id}"). A request the mux serves no pattern for (404,
// 405) is keyed "route:(unmatched)". A pattern that hands its subtree to
// another router ("/api/", with http.StripPrefix) is one route to mux;
// limit inside that router to tell its routes apart. A nil mux is a
// constructor error.
func ServeMuxPattern(mux *http.ServeMux) (Func, error) {
	if mux == nil {
		return nil, fmt.Errorf("%w: ServeMuxPattern: nil mux", ErrInvalidOption)
	}
	return func(r *http.Request) (string, error) {
		_, p := mux.Handler(r)
		return routeKey(p, "", false), nil
	}, nil
}

// unmatchedRoute keys the requests no route serves. Every ServeMux
// pattern has a '/', and every chi pattern starts with one, so no
// pattern's key equals it.
const unmatchedRoute = "route:(unmatched)"

// A route is a RoutePattern or Endpoint Func, with the one log line its
// misconfiguration gets.
type route struct {
	fn     string // the constructor, for the log line
	method bool   // key by method too (Endpoint)
	logged sync.Once
}

func (rt *route) key(r *http.Request) (string, error) {
	if k, ok := chiKey(r, rt.method); ok {
		return k, nil
	}
	if r.Pattern == "" {
		rt.logged.Do(func() {
			slog.Default().Error("keyfunc: "+rt.fn+" cannot tell which route serves the request: the limiter sits where no router has said (around a ServeMux: use keyfunc.ServeMuxPattern(mux); or wrap the handler given to mux.Handle); every request is refused with 500",
				"method", r.Method, "path", r.URL.Path)
		})
		return "", errNoRoute
	}
	method := ""
	if rt.method {
		method = r.Method
	}
	return routeKey(r.Pattern, method, true), nil
}

// routeKey returns the key of pattern p, "" meaning no route; with a
// method, p is prefixed with it unless p carries one. anyMethod says
// that p may have matched any method string, so that only the standard
// methods are kept apart.
func routeKey(p, method string, anyMethod bool) string {
	switch {
	case p == "":
		return unmatchedRoute
	case method == "" || hasMethod(p):
		return bound("route:"+p, defaultMaxKeyLen, false)
	case anyMethod && !standardMethod(method):
		method = "*"
	}
	return bound("route:"+method+" "+p, defaultMaxKeyLen, false)
}

// hasMethod reports whether a ServeMux pattern, "[METHOD ][HOST]/[PATH]",
// starts with a method: a space before the first '/'.
func hasMethod(p string) bool {
	sp := strings.IndexByte(p, ' ')
	return sp >= 0 && sp < strings.IndexByte(p, '/')
}

// standardMethod reports whether m is one of RFC 9110's methods or PATCH.
func standardMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return true
	}
	return false
}

// findContexts are the chi contexts chiKey hands to Routes.Match, which
// writes its matches there: pooled, so that a lookup allocates only what
// chi's matching does.
var findContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// chiKey asks the root chi router above r which route it will route r to
// and returns that route's key, with the method routed by when withMethod
// is set; it reports false when r has no chi router above it.
//
// Routes.Match (chi v5.0.0 on) walks the routers as routing will, leaving
// each level's pattern in the context's RoutePatterns; joined as chi's
// Routes.Find (v5.2.0 on) joins them, mounts' "/*" dropped, they are the
// full pattern, built here with the key in one allocation.
func chiKey(r *http.Request, withMethod bool) (string, bool) {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return "", false
	}
	method := rctx.RouteMethod
	if method == "" {
		method = r.Method
	}
	var path string
	if len(rctx.RoutePatterns) == 0 {
		path = rctx.RoutePath // set by a root middleware that rewrites the path
	}
	if path == "" {
		path = r.URL.RawPath
	}
	if path == "" {
		path = r.URL.Path
	}
	if path == "" {
		path = "/"
	}
	fc := findContexts.Get().(*chi.Context)
	fc.Reset()
	defer findContexts.Put(fc)
	if !rctx.Routes.Match(fc, method, path) || len(fc.RoutePatterns) == 0 {
		return unmatchedRoute, true
	}
	pats := fc.RoutePatterns
	n := len("route: ") + len(method)
	for _, p := range pats {
		n += len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString("route:")
	if withMethod {
		b.WriteString(method)
		b.WriteByte(' ')
	}
	for i, p := range pats {
		if i < len(pats)-1 {
			p = strings.TrimSuffix(p, "/*")
		}
		b.WriteString(p)
	}
	fc.Reset() // drop the request's strings before pooling
	return bound(b.String(), defaultMaxKeyLen, false), true
}

// errNoRoute is one value: a misconfigured server meets it on every
// request.
var errNoRoute = fmt.Errorf("%w: %w: no route pattern: no router says which route serves the request (around a ServeMux, use keyfunc.ServeMuxPattern(mux), or wrap the handler given to mux.Handle)", ErrMisconfigured, ErrNoKey)
