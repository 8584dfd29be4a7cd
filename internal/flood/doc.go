// Package flood holds the tests of what a flood of fresh client keys (one
// API key minted per request, from one address) costs in Redis and what
// bounds it, and nothing else: it sits above middleware and
// limiter/redisstore, which it imports from its tests only. Every test
// starts throwaway redis-server processes on loopback, with the
// maxmemory and maxmemory-policy it is about, and ends by itself.
//
//	go test -run TestBytesPerKey -v ./internal/flood      # bytes per client key in Redis
//	go test -run TestPerAddress -v ./internal/flood       # a per-address limiter ahead bounds the flood
//	go test -run TestEvictionPolicies -v ./internal/flood # what each maxmemory-policy keeps
//
// SECURITY.md and docs/redis.md quote their figures.
package flood
