// Package middleware compares the cost of rate-limiting HTTP middleware on
// the allow path: this module's middleware against sethvargo/go-limiter's
// httplimit, ulule/limiter's stdlib middleware, throttled's
// HTTPRateLimiterCtx and go-chi/httprate, each with its in-memory store,
// on one workload (see BenchmarkPeers). It lives in the nested bench
// module so that the peers never enter the main module's go.mod.
//
//	cd bench && go test -run '^$' -bench Peers -benchmem -count 6 ./middleware
package middleware
