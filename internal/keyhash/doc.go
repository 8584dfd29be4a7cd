// Package keyhash turns a client's key (an address, a path, an API key)
// into the keyed hash a store keeps in its place, so that no store holds
// personal data in clear: limiter.WithKeyHash for the memory store and
// redisstore.WithKeyHash for Redis share it, so that one secret gives one
// hashed key whatever the store.
//
// The hash is HMAC-SHA-256 under a secret, truncated to 128 bits: keyed,
// so that a key cannot be found again by hashing every IPv4 address (2^32
// guesses) or every plausible API key, as a plain SHA-256 could be.
package keyhash
