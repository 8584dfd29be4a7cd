// Package migrating is docs/migrating.md's recipes, compiled and run: for
// each limiter a service may come from (golang.org/x/time/rate per
// client, go-chi/httprate, ulule/limiter, sethvargo/go-limiter,
// throttled), an Example that serves the same client through the
// service's old setup and through its equivalent here, and prints what
// the client sees (status codes, remaining counts, header names, admitted
// requests over time). Our side runs on a limitertest.Clock; the peers'
// sides print only what does not depend on when they run. gorilla/mux's
// Router.Use, which applies a middleware on every request, has its test
// and benchmark here too.
//
// A module of its own, so that the peers, which only these examples
// need, stay out of the root go.mod:
//
//	cd example/migrating && go test ./...
package migrating
