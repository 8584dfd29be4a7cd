// Package chikey keys requests by the client address that one of chi's
// ClientIPFrom* middlewares resolved. It is a package of its own because
// chi's middleware package imports net/http/pprof and expvar, which
// register /debug/pprof/ and /debug/vars on http.DefaultServeMux: only
// programs that already use chi's middleware import this package, and
// keyfunc itself stays free of them.
//
// Use, behind a load balancer in 10.0.0.0/8:
//
//	r := chi.NewRouter()
//	r.Use(chimw.ClientIPFromXFF("10.0.0.0/8"))
//	key, err := chikey.ClientIP()
//	if err != nil {
//		log.Fatal(err)
//	}
//	mw, err := middleware.New(lim, middleware.WithKey(key))
//	if err != nil {
//		log.Fatal(err)
//	}
//	r.With(mw).Get("/users/{id}", getUser)
package chikey
