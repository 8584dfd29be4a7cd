package limiter

import "time"

// Hooks for the package's external tests (package limiter_test).

// WithMono makes NewMemoryStore read its monotonic clock from mono: see
// withMono.
func WithMono(mono func() time.Duration) MemoryOption { return withMono(mono) }

// SweepAt runs one pass of s's background sweep as if its monotonic clock
// read mono: the pass the sweep's ticker runs.
func SweepAt(s *MemoryStore, mono time.Duration) { s.sweepEnded(int64(mono)) }

// ShardOf returns the index of the shard that holds key's counters under p.
func ShardOf(s *MemoryStore, key string, p *Policy) uint64 { return s.hash(key, p) & s.mask }
