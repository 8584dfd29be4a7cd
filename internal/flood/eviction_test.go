package flood

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/limiter"
)

// The clients of TestEvictionPolicies, each with a counter of its own.
const (
	evictClients    = 300   // spent ones, and as many active ones
	evictLimit      = 10    // per minute
	evictChunks     = 6     // the flood comes in chunks; active clients ask between them
	evictChunkKeys  = 5_000 // fresh keys per chunk
	evictMaxMemory  = "3mb" // about 10,000 keys
	activeBefore    = 2     // requests of an active client before the flood
	activeCount     = activeBefore + evictChunks
	someSurvivorsAt = evictClients / 2

	// lfuDecayMinutes is lfu-decay-time, as recommended: at least the
	// longest window, in minutes. At the default of 1, every key idle
	// across a minute's start is counted one lower, and a spent counter
	// read only a few times falls to a fresh key's level.
	lfuDecayMinutes = "60"
)

// TestEvictionPolicies floods a Redis of 3 MB with 30,000 fresh client
// keys, each asked once, after 300 clients have spent their budget of 10
// and while 300 others ask once between chunks of the flood, under each
// maxmemory-policy, and counts the counters that the flood left intact
// (the spent ones at 10, the active ones at 8: a counter evicted and
// created afresh reads less). Every key the store writes has an expiry,
// so volatile-* and allkeys-* pick from the same keys.
//
// Measured: only LFU keeps every counter, because a fresh key starts at
// LFU_INIT_VAL and any key read once more is counted above it, so the
// flood's keys, each touched once, go first (with lfu-decay-time at
// least the window: see lfuDecayMinutes). LRU evicts the keys idle
// longest: the spent ones first (nothing touches a counter once its
// client is refused locally, by the over-limit cache) and active ones
// whose last request is older than the last few thousand fresh keys.
// volatile-ttl evicts the keys that expire first, the window's oldest;
// random policies evict any counter. noeviction fails every write at
// maxmemory (see TestPerKeyFloodUnderNoeviction).
//
//	go test -run TestEvictionPolicies -v ./internal/flood
func TestEvictionPolicies(t *testing.T) {
	tests := []struct {
		policy       string
		keepsAll     bool // every spent and active counter intact
		losesSpent   bool // fewer than someSurvivorsAt spent counters intact
		failsAtBound bool // writes fail with OOM
	}{
		{"volatile-lfu", true, false, false},
		{"allkeys-lfu", true, false, false},
		{"volatile-lru", false, true, false},
		{"allkeys-lru", false, true, false},
		{"volatile-ttl", false, true, false},
		{"volatile-random", false, true, false},
		{"allkeys-random", false, true, false},
		{"noeviction", false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.policy, func(t *testing.T) {
			c := startRedis(t, evictMaxMemory, tt.policy, "--lfu-decay-time", lfuDecayMinutes)
			p := limiter.MustPolicy("api", limiter.PerMinute(evictLimit))
			l := newLimiter(t, p, newStore(t, c))
			keys := func(kind string, from, n, times int) []string {
				var ks []string
				for i := range n {
					for range times {
						ks = append(ks, kind+clientKey(from+i))
					}
				}
				return ks
			}
			if _, failed, err := allowAll(t, l, keys("spent-", 0, evictClients, evictLimit), 16); failed > 0 {
				t.Fatalf("spending: %d failed: %v", failed, err)
			}
			if _, failed, err := allowAll(t, l, keys("active-", 0, evictClients, activeBefore), 16); failed > 0 {
				t.Fatalf("active clients: %d failed: %v", failed, err)
			}
			floodFailed := 0
			for chunk := range evictChunks {
				_, failed, _ := allowAll(t, l, keys("flood-", chunk*evictChunkKeys, evictChunkKeys, 1), 32)
				floodFailed += failed
				allowAll(t, l, keys("active-", 0, evictClients, 1), 16)
			}
			spent := intact(t, c, "spent-", evictLimit)
			active := intact(t, c, "active-", activeCount)
			evicted := info(t, c, "stats", "evicted_keys")
			t.Logf("%s: intact %d/%d spent and %d/%d active counters; %d keys evicted, %d flood decisions failed",
				tt.policy, spent, evictClients, active, evictClients, evicted, floodFailed)

			switch {
			case tt.failsAtBound && (floodFailed == 0 || spent != evictClients):
				t.Errorf("got %d flood failures and %d/%d spent counters intact, want failures and every spent counter kept",
					floodFailed, spent, evictClients)
			case !tt.failsAtBound && (floodFailed > 0 || evicted == 0):
				t.Errorf("got %d flood failures and %d evictions, want none and some", floodFailed, evicted)
			}
			if tt.keepsAll && (spent != evictClients || active != evictClients) {
				t.Errorf("got %d spent and %d active counters intact, want all %d of each", spent, active, evictClients)
			}
			if tt.losesSpent && spent >= someSurvivorsAt {
				t.Errorf("got %d/%d spent counters intact, want fewer than %d (evicted before the flood's keys)",
					spent, evictClients, someSurvivorsAt)
			}
		})
	}
}

// intact counts the counters of clients named kind that hold want.
func intact(t *testing.T, c *redis.Client, kind string, want int) int {
	t.Helper()
	n := 0
	for _, k := range scanKeys(t, c, prefix+"{"+kind+"*") {
		v, err := c.Get(context.Background(), k).Result()
		if errors.Is(err, redis.Nil) {
			// Evicted since SCAN named it: Redis evicts before any
			// command while over maxmemory, reads included.
			continue
		}
		if err != nil {
			t.Fatalf("GET %s: %v", k, err)
		}
		if v == strconv.Itoa(want) {
			n++
		}
	}
	return n
}
