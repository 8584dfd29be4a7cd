package redisstore

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// shardedMap is the table behind the over-limit cache and the leases: an
// entry per key and usage (the policy's ID: one entry for every limit a
// plan is decided under, limiter.Limiter.For), in shards
// with a mutex each so that hot keys seldom share a lock.
//
// Memory is bounded: at most size entries. A full shard first drops the
// entries its user finds stale (see room); if it is still full, the new
// key is not kept, and its requests go to Redis as if there were no table.
//
// Under serverClock an entry's windows are Redis's, and the application's
// clock says nothing about them: an app clock stepped back would keep a
// key refused, or a lease valid, after Redis's window ended, for as long
// as the step. Such entries map Redis's time onto mono, which no step
// moves.
type shardedMap[V any] struct {
	seed     maphash.Seed
	shards   [nShards]shard[V]
	perShard int
	server   bool                 // serverClock: entries age on mono
	mono     func() time.Duration // monotonic time; a test may set it
}

const nShards = 64

// maxLocalAge bounds how long a replica decides by what it keeps of
// Redis's counts, in the over-limit cache and in its leases: an entry
// lives until its window ends, or until a second has passed since the
// decision that made it set out (on the store's time base), whichever
// comes first. So what another replica does to a key's counts (a Reset,
// a refund, a settle) is obeyed everywhere within a second: a key over
// its limit here asks Redis again at least once a second (a round trip a
// second per refused key and replica, where the cache alone would have
// spared it for the rest of a month), and units leased before the change
// are spent for at most a second after it. A raised limit or another
// plan needs no wait: the cache decides again under the request's own
// limits.
const maxLocalAge = time.Second

type shard[V any] struct {
	mu sync.Mutex
	m  map[shardKey]V
	// epoch counts the Resets of the shard's keys. A decision reads it
	// before its round trip and records nothing if it moved: its reply was
	// charged to counts Reset deleted, and must not put back the key.
	epoch atomic.Uint64
	_     [32]byte
}

type shardKey struct {
	usage string // the policy's ID: its name and windows, whatever its limits
	key   string
}

// entryKey returns the entry of key under p's usage.
func entryKey(p *limiter.Policy, key string) shardKey { return shardKey{p.ID(), key} }

func (s *shardedMap[V]) init(size int, server bool) {
	start := time.Now()
	s.seed, s.perShard, s.server = maphash.MakeSeed(), max(1, size/nShards), server
	s.mono = func() time.Duration { return time.Since(start) }
	for i := range s.shards {
		s.shards[i].m = make(map[shardKey]V)
	}
}

func (s *shardedMap[V]) shard(key string) *shard[V] {
	return &s.shards[maphash.String(s.seed, key)%nShards]
}

// room reports whether sh, locked, may take a new entry, first dropping
// the entries stale reports if it is full. Each purge empties much of the
// shard, so inserts cost O(1) amortised.
func (s *shardedMap[V]) room(sh *shard[V], stale func(V) bool) bool {
	if len(sh.m) >= s.perShard {
		for k, v := range sh.m {
			if stale(v) {
				delete(sh.m, k)
			}
		}
	}
	return len(sh.m) < s.perShard
}

// drop deletes key's entry under p's usage (whatever its limits) and
// moves its shard's epoch, so that no decision already in flight can
// record the key again.
func (s *shardedMap[V]) drop(p *limiter.Policy, key string) {
	sh := s.shard(key)
	sh.mu.Lock()
	delete(sh.m, entryKey(p, key))
	sh.epoch.Add(1)
	sh.mu.Unlock()
}
