// Package keyfunc resolves the key a request is rate-limited by: the
// client's address, an API key header, the authenticated principal, the
// route pattern, or several of these joined.
//
// A key function is a Func. It returns a non-empty key or an error
// wrapping ErrNoKey, never an empty key: a request whose identity cannot be
// resolved must get an answer of its own (the middleware's 400), not fall
// into one bucket shared by everyone.
//
// A key function installed where it can never work (RoutePattern around
// a ServeMux, chikey.ClientIP without chi's ClientIPFrom* middleware) fails
// with an error that also wraps ErrMisconfigured: the middleware answers
// that with 500 and reports it, since the server, not the client, is at
// fault.
//
// Keys carry the kind of identity as a prefix, so two kinds never collide;
// an IPv4 address alone goes bare, since no prefixed key looks like one:
//
//	RemoteHost, TrustedProxy, ResolvedAddr 203.0.113.7 (IPv4: the bare address)
//	                                        ip6:2001:db8:1:2::/64
//	Header("X-API-Key")                     hdr:X-Api-Key:k-123
//	Principal(accessor)                     user:42
//	RoutePattern()                          route:/api/v1/users/{id}
//	Endpoint()                              route:GET /api/v1/users/{id}
//	Join(a, b)                              join:11:203.0.113.7,17:route:/users/{id},
//	First(a, b)                             the key of the first of a, b that resolves
//	any key over the bound (256 bytes)      sha256:<64 hex digits>
//
// "By user when signed in, else by address", the most common rule, is
// First(principal, remoteHost): the user's "user:42" when the accessor
// reports one, the client's address otherwise. A user whose id looks like
// an address still gets "user:203.0.113.7", never the address's budget.
//
// Route keys are the full pattern of the route that will serve the
// request, wherever the limiter sits in a chi router (root r.Use, inside
// r.Route, r.Group or a mounted sub-router, r.With): RoutePattern and
// Endpoint ask chi's root router, so a subtree never shares one budget.
// Inside a ServeMux they read r.Pattern; around one, ServeMuxPattern asks
// the mux. This is why keyfunc imports chi's root package, which imports
// only the standard library.
//
// Addresses are normalized before they become keys: the port is dropped,
// IPv4-mapped IPv6 folds to IPv4, as do the IPv6 forms that carry an IPv4
// client (NAT64 and IPv4-compatible, see RemoteHost), zones are dropped,
// and IPv6 addresses are grouped by their /64 (WithIPv6Prefix), the block
// one subscriber normally holds, so a client cannot rotate into fresh
// budgets.
//
// A bare address in RemoteAddr ("203.0.113.7", "2001:db8::1"), which
// chi's RealIP and other middleware that rewrite RemoteAddr leave, is
// keyed as "host:port" is.
//
// Forwarding headers (X-Forwarded-For, Forwarded, X-Real-IP) are honoured
// only by TrustedProxy, and only when the direct peer is inside the
// trusted prefixes given at construction; from anyone else they are
// ignored. Behind several proxies, give TrustedProxy all their prefixes:
// it walks X-Forwarded-For from the right past each of them.
//
// With chi, package keyfunc/chikey keys by the address chi's ClientIPFrom*
// middleware resolved; it lives apart because chi's middleware package
// registers /debug/pprof/ and /debug/vars, which importing keyfunc must not.
// ResolvedAddr does the same for any other resolver.
//
// Typical use, keying by client behind a load balancer in 10.0.0.0/8:
//
//	key, err := keyfunc.TrustedProxy(keyfunc.XForwardedFor, []string{"10.0.0.0/8"})
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := middleware.New(lim, middleware.WithKey(key))
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.ListenAndServe(addr, mw(handler))
package keyfunc
