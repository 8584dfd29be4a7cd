package sim

import (
	"context"
	"time"
)

// tokenBucket is a reference model, for comparison only: each key has a
// bucket of capacity Limit tokens, full at its first request, refilled
// continuously at Limit tokens per Window; a request takes one token or
// is refused.
//
// Tokens are counted exactly in token·nanoseconds (one token is Window
// units), never in floats: at the edge pattern's 1.00 s the bucket holds
// exactly one token, which a float sum of 0.1s could leave at 0.99999.
type tokenBucket struct {
	cfg     Config
	buckets map[string]*bucket
}

type bucket struct {
	units int64 // tokens × Window in ns
	last  time.Duration
}

func newTokenBucket(cfg Config) *tokenBucket {
	return &tokenBucket{cfg: cfg, buckets: make(map[string]*bucket)}
}

func (m *tokenBucket) Allow(_ context.Context, key string, at time.Duration) (bool, error) {
	win := int64(m.cfg.Window)
	capacity := m.cfg.Limit * win // ≤ MaxLimit × MaxWindow < 2^63
	b, ok := m.buckets[key]
	if !ok {
		b = &bucket{units: capacity, last: at}
		m.buckets[key] = b
	}
	// After a whole window the bucket is full whatever it held, so the
	// elapsed time is capped there and the product cannot overflow.
	elapsed := max(0, min(int64(at-b.last), win))
	b.last = at
	if refill := elapsed * m.cfg.Limit; refill >= capacity-b.units {
		b.units = capacity
	} else {
		b.units += refill
	}
	if b.units < win {
		return false, nil
	}
	b.units -= win
	return true, nil
}

func (m *tokenBucket) Close() error { return nil }
