package redisstore

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/keyhash"
)

// WithKeyHash keeps no client key in clear in Redis: every key the store
// is given (an address, a path, an API key) is replaced, before it
// reaches Redis or anything the store keeps, by "hmac:" and the first
// 128 bits of its HMAC-SHA-256 under secret, in base64url (27 bytes
// whatever the key's length), as the Cluster hash tag of its Redis keys:
// rl:{hmac:3q2-7wAAAAAAAAAAAAAAAA}:api:60000:29675211. It covers every
// call (decisions, leases, refunds, settles, resets, in-flight slots,
// usage) and what WithFailLocal keeps while Redis is away; events
// (WithObserver) name the hashed key. The limiter's methods still take
// the clear key: Limiter.Usage, Reset and Refund, and the console, find
// a customer by it, and an HTTP and a gRPC door that key a client alike
// count one budget.
//
// secret must be at least 16 bytes (128 bits, the strength of the
// hash), drawn at random and kept as the service's other secrets are;
// anything shorter makes New return an error wrapping ErrInvalidOption.
// Keyed, the hash cannot be reversed by hashing every IPv4 address or
// guessable API key. Every replica on one Redis needs the same secret,
// and a new secret starts every client's count afresh (the keys change),
// as a key layout change would. Keys written in Redis cannot be listed
// back to clear keys: list customers from the service's own records.
// It costs one HMAC per call and one 32-byte allocation: 1.4µs on a
// loaded 2-core machine (BenchmarkKey in internal/keyhash), small beside
// a round trip.
func WithKeyHash(secret []byte) Option {
	return func(c *config) { c.hashSecret, c.hashSet = append([]byte(nil), secret...), true }
}

// newHasher returns the hasher of WithKeyHash, or nil without it.
func newHasher(c *config) (*keyhash.Hasher, error) {
	if !c.hashSet {
		return nil, nil
	}
	h, err := keyhash.New("WithKeyHash", c.hashSecret)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOption, err)
	}
	return h, nil
}

// clientKey returns the key the store keeps for key: its hash under
// WithKeyHash, else key itself. An empty key stays empty, for the
// checks to refuse.
func (s *Store) clientKey(key string) string {
	if s.hasher == nil || key == "" {
		return key
	}
	return s.hasher.Key(key)
}
