package middleware

import (
	"fmt"
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
)

// ByIP returns middleware that admits limit requests per window from each
// client address (keyfunc.RemoteHost: the TCP peer, IPv6 grouped by /64),
// in one line:
//
//	mux.Handle("GET /api/", middleware.ByIP(100, time.Minute)(api))
//
// Behind a reverse proxy every request comes from the proxy: use New with
// keyfunc.TrustedProxy there. For layered windows, another store (Redis,
// to share the limit between replicas), headers or an observer, build the
// limiter yourself and call New.
//
// ByIP checks its arguments once and panics if the limit is not positive
// or the window is not a whole number of milliseconds, at least 1 ms: a
// literal that is wrong in code, found when the route is built, as
// regexp.MustCompile and chi's Throttle do.
//
// The counters live in an in-memory store of the middleware's own, which
// runs no goroutine: windows that have passed are freed by the requests
// that follow, and the whole store is garbage when the middleware is. So
// nothing needs closing, and a test or a server that drops the middleware
// leaks nothing. The store holds at most 2^21 counters (limiter.WithMaxKeys's
// default).
//
// opts are the limiter's, applied after the one-line defaults: a test
// passes limiter.WithClock(clk), with clk a limitertest.Clock, and moves
// the clock to cross a window without sleeping, still in one line:
//
//	h := middleware.ByIP(2, time.Minute, limiter.WithClock(clk))(api)
//
// A nil option panics, as a bad limit does.
//
// Every ByIP names its policy "by-ip" (ByHeader "by-header", ByPrincipal
// "by-principal"), which is harmless on the store of its own each builds.
// Given a shared store (limiter.WithStore, Redis say), two of them would
// count into one budget, and the second one built while the first lives
// panics instead (see limiter.WithStore): build the limiter of each route
// with a policy of its own name and call New, or, for one budget over
// several routes on purpose, wrap them all in one middleware.
func ByIP(limit int64, window time.Duration, opts ...limiter.Option) func(http.Handler) http.Handler {
	key, err := keyfunc.RemoteHost()
	if err != nil {
		panic(fmt.Errorf("middleware: ByIP: %w", err))
	}
	return oneLine("ByIP", "by-ip", limit, window, key, opts)
}

// ByHeader returns middleware that admits limit requests per window for
// each value of the request header name, an API key say, in one line:
//
//	mux.Handle("GET /api/", middleware.ByHeader("X-API-Key", 1000, time.Hour)(api))
//
// A request without the header, with it empty or given twice is answered
// 400 Bad Request: it has no key, and is never pooled with others. Key by a
// header only once something has checked it, or a client mints a fresh
// budget by sending a fresh value; keyfunc.WithHashedValues (through New)
// keeps secret values out of memory.
//
// ByHeader panics on a name that is not a valid header field name and on
// the arguments ByIP rejects; its resources are released as ByIP's are,
// and opts are the limiter's, as ByIP takes them (limiter.WithClock).
func ByHeader(name string, limit int64, window time.Duration, opts ...limiter.Option) func(http.Handler) http.Handler {
	key, err := keyfunc.Header(name)
	if err != nil {
		panic(fmt.Errorf("middleware: ByHeader: %w", err))
	}
	return oneLine("ByHeader", "by-header", limit, window, key, opts)
}

// ByPrincipal returns middleware that admits limit requests per window for
// each signed-in user, as the accessor reports them (see
// keyfunc.Principal), and for each client address when the request is
// anonymous: the most common rule, in one line.
//
//	r.Use(middleware.ByPrincipal(userID, 100, time.Minute))
//
// The key is keyfunc.First(keyfunc.Principal(accessor),
// keyfunc.RemoteHost()), so a user keeps one budget from every address,
// and no user id can take an address's budget. To refuse anonymous
// requests instead (400), call New with WithKey(keyfunc.Principal(...)).
//
// ByPrincipal panics on a nil accessor and on the arguments ByIP rejects;
// its resources are released as ByIP's are, and opts are the limiter's,
// as ByIP takes them (limiter.WithClock).
func ByPrincipal(accessor func(*http.Request) (string, bool), limit int64, window time.Duration, opts ...limiter.Option) func(http.Handler) http.Handler {
	user, err := keyfunc.Principal(accessor)
	if err != nil {
		panic(fmt.Errorf("middleware: ByPrincipal: %w", err))
	}
	addr, err := keyfunc.RemoteHost()
	if err != nil {
		panic(fmt.Errorf("middleware: ByPrincipal: %w", err))
	}
	key, err := keyfunc.First(user, addr)
	if err != nil {
		panic(fmt.Errorf("middleware: ByPrincipal: %w", err))
	}
	return oneLine("ByPrincipal", "by-principal", limit, window, key, opts)
}

// oneLine builds the middleware of the one-line forms: limit per window
// under policy name, keyed by key, over an in-memory store without a sweep
// goroutine (see ByIP), with the limiter options opts and New's defaults
// otherwise. The clock stays the limiter's alone, as everywhere: the
// middleware and the headers read it from the limiter.
func oneLine(fn, name string, limit int64, window time.Duration, key keyfunc.Func, opts []limiter.Option) func(http.Handler) http.Handler {
	p, err := limiter.NewPolicy(name, limiter.Rate{Limit: limit, Window: window})
	if err != nil {
		panic(fmt.Errorf("middleware: %s: %w", fn, err))
	}
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		panic(fmt.Errorf("middleware: %s: %w", fn, err))
	}
	l, err := limiter.New(p, append([]limiter.Option{limiter.WithStore(store)}, opts...)...)
	if err != nil {
		panic(fmt.Errorf("middleware: %s: %w", fn, err))
	}
	mw, err := New(l, WithKey(key))
	if err != nil {
		panic(fmt.Errorf("middleware: %s: %w", fn, err))
	}
	return mw
}
