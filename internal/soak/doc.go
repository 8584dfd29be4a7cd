// Package soak holds the soak test of the whole stack and nothing else: four
// replicas, each an HTTP server with its own middleware, limiter, Redis
// store and Redis client, share one policy on one Redis while many clients
// hammer them for a bounded time on loopback.
//
// The test checks that, for every key and every window, the replicas
// together admitted exactly the limit whenever demand exceeded it (each
// response is placed in its window by its X-RateLimit-Reset header, not by
// the client's clock), that no request ended in an error or a 5xx, and
// reports the latency percentiles seen by the clients:
//
//	go test -run TestSoak -v ./internal/soak                     # 30s
//	SOAK_DURATION=5m go test -run TestSoak -v -timeout 10m ./internal/soak
//	go test -short -run TestSoak -v ./internal/soak              # 5s
//
// It needs the Redis at 127.0.0.1:6379 and fails, never skips, without it.
// The package has no other code: it sits above middleware and
// limiter/redisstore, which it imports from its test only.
package soak
