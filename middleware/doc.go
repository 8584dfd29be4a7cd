// Package middleware puts a fixed-window limiter in front of HTTP handlers.
//
// The common cases take one line:
//
//	r.Use(middleware.ByIP(100, time.Minute))                   // per client address
//	r.Use(middleware.ByHeader("X-API-Key", 1000, time.Hour))   // per API key
//	r.Use(middleware.ByPrincipal(userID, 100, time.Minute))    // per user, else per address
//
// They keep their counters in a memory store of their own, start no
// goroutine and need no Close; each has a budget of its own. For
// everything else (layered windows, Redis shared between replicas,
// several limits on one route, observers, the draft headers) build a
// limiter.Limiter and call New. Give each limiter on a shared store a
// policy of its own name: limiter.New refuses a second live limiter of
// one policy on one store, which would silently share the first one's
// budget (to share a budget on purpose, share the Limiter).
//
// New returns the usual func(http.Handler) http.Handler, so the result
// wraps a single route (mux.Handle("GET /x", mw(h))), a chi group (r.Use,
// r.With) or a whole server. Settings are checked once, by New; a request
// never discovers a bad configuration.
//
// For each request the middleware resolves the client's key (by default
// its remote host), asks the limiter, and then:
//
//   - allowed: sets the rate-limit headers and calls the wrapped handler;
//   - denied: answers 429 Too Many Requests with Retry-After, through the
//     headers package (or WithDeniedHandler's);
//   - the limiter could not decide (a store failing, a cancelled request):
//     answers 500 with a generic body, never the error's text, or calls the
//     wrapped handler when WithFailOpen is set;
//   - the key could not be resolved (the key function's error wraps
//     keyfunc.ErrNoKey): answers 400 (or a custom handler); any other
//     key function error is the server's, 500 (see WithKey). A
//     client without a key is never pooled into a bucket shared by all.
//     Where anonymous clients are welcome, give the key function a
//     fallback: WithKey with keyfunc.First(principal, remoteHost) keys a
//     signed-in user by id and anyone else by address.
//
// Several limits on one route (per client address and per user, say) are
// given to one middleware with WithLimiter, which resolves every key
// first, then decides in order and stops at the first refusal, or by
// stacking middlewares (chi's r.Use inside r.Route, then r.With). Either
// way the response carries one set of headers, describing the most
// restrictive decision, and, with the draft fields
// (headers.WithDraftHeaders, through WithHeaders), RateLimit-Policy lists
// every policy that applied. The handler reads that decision with
// DecisionFrom.
//
// WithCountIf charges every request before the handler runs and refunds
// the responses that do not count once it has answered: a login route
// that counts failures only.
//
// WithInFlight adds a cap on requests at once (limiter.InFlight: at most
// 5 exports per API key, across replicas with Redis): the rates decide
// first, then the cap; a request the cap refuses is answered 429 and
// refunded to every rate, and an admitted one holds its slot while the
// handler runs, given back on every way out, a panic included. InFlight
// is a cap alone, with no rate, in one line: on one route of a group whose
// rate another middleware charges (once), or on a route that has none.
//
// A key function installed where it cannot work (keyfunc.RoutePattern
// around a ServeMux, chikey.ClientIP without chi's ClientIPFrom*) is the
// server's mistake: 500, reported as Misconfigured; so is a key function
// that fails for a reason of its own (an error not wrapping
// keyfunc.ErrNoKey: its database is down): 500, reported as KeyFailed. A request whose
// client left before the limiter decided is not admitted, even with
// WithFailOpen: 499, reported as Canceled.
//
// WithShadow decides, counts and sends headers but never refuses, so a new
// limit can be watched before it is enforced; with several limiters it
// stops at the first refusal too, charging exactly what enforcing would. WithObserver sees every
// decision, error and key failure; package middleware/metrics turns them
// into Prometheus metrics and middleware/otelmetrics into OpenTelemetry
// instruments and span events (each a module of its own).
//
// The middleware keeps no clock: it reads the limiter's once per decision,
// decides and dates at that instant, and times the decision for the
// observer by the same clock (see [Limiter]), so a
// test that moves the limiter's limitertest.Clock moves everything.
//
//	p := limiter.MustPolicy("api", limiter.PerMinute(100))
//	l, err := limiter.New(p)
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer l.Close()
//	mw, err := middleware.New(l) // keyed by remote host
//	if err != nil {
//		log.Fatal(err)
//	}
//	mux := http.NewServeMux()
//	mux.Handle("GET /api/items", mw(items))
package middleware
