// Package miniredistest runs the Redis store's shared suites on
// miniredis (github.com/alicebob/miniredis/v2), the in-process Redis many
// Go services test with: every decision, settle, refund, reset and cap
// slot as the memory store answers them, the clock steps and the
// calendar rows. It is a module of its own so that the library's go.mod
// never requires miniredis; docs/redis.md says how a service uses it.
package miniredistest
