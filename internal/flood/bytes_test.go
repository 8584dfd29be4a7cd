package flood

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// bytesKeys is how many client keys each row of TestBytesPerKey mints
// after its warm-up: enough that Redis's hash tables (a power of two of
// buckets, 8 bytes each, for the keys and again for their expiries) are
// between 50% and 100% full, as they are most of the time.
const bytesKeys = 40_000

// TestBytesPerKey measures what one client key costs in Redis, for each
// clock source, with one window and with two, on a throwaway redis-server
// run as recommended (maxmemory with volatile-lfu; under an LRU or LFU
// policy Redis gives every count an object of its own instead of a shared
// integer). It logs, per client key: used_memory's growth over bytesKeys
// keys (everything: the keys, values, expiries and both hash tables), and
// the MEMORY USAGE of the keys (key, value and entry, without the expiry
// and the table), with the length of one Redis key:
//
//	go test -run TestBytesPerKey -v ./internal/flood
//
// It asserts a sane bound, so that a change of layout that doubles the
// cost shows.
func TestBytesPerKey(t *testing.T) {
	day := limiter.Rate{Limit: 10_000, Window: 24 * time.Hour}
	tests := []struct {
		name   string
		server bool // redisstore.WithServerClock
		p      *limiter.Policy
		most   float64 // bytes per client key, used_memory
	}{
		{"app_clock_one_window", false, limiter.MustPolicy("api", limiter.PerHour(1000)), 300},
		{"app_clock_two_windows", false, limiter.MustPolicy("api", day, limiter.PerHour(1000)), 600},
		{"server_clock_one_window", true, limiter.MustPolicy("api", limiter.PerHour(1000)), 300},
		{"server_clock_two_windows", true, limiter.MustPolicy("api", day, limiter.PerHour(1000)), 600},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m measured
			for attempt := 0; ; attempt++ {
				var ok bool
				m, ok = measure(t, tt.server, tt.p)
				if ok {
					break
				}
				// Under WithServerClock the keys of an hour that ended
				// during the run expire: measure again.
				if attempt == 1 {
					t.Fatalf("keys expired during two runs in a row")
				}
			}
			t.Logf("%s, %d window(s), Redis key %d B (client key %d B): used_memory %.1f B per client key, MEMORY USAGE %.1f B",
				tt.name, tt.p.NumRates(), m.keyLen, len(clientKey(0)), m.used, m.usage)
			if m.used <= 0 || m.used > tt.most || m.usage <= 0 || m.usage > m.used {
				t.Errorf("got used_memory %.1f B and MEMORY USAGE %.1f B per client key, want 0 < usage ≤ used ≤ %.0f",
					m.used, m.usage, tt.most)
			}
		})
	}
}

type measured struct {
	used   float64 // used_memory growth per client key
	usage  float64 // MEMORY USAGE of a client key's Redis keys
	keyLen int     // bytes of one Redis key
}

// measure mints bytesKeys client keys under p on a fresh server and
// reports what they cost; ok is false when some keys expired meanwhile.
func measure(t *testing.T, server bool, p *limiter.Policy) (m measured, ok bool) {
	t.Helper()
	c := startRedis(t, "1gb", "volatile-lfu")
	var opts []redisstore.Option
	if server {
		opts = append(opts, redisstore.WithServerClock())
	}
	l := newLimiter(t, p, newStore(t, c, opts...))
	keys := func(from, n int) []string {
		ks := make([]string, n)
		for i := range ks {
			ks[i] = clientKey(from + i)
		}
		return ks
	}
	// The warm-up loads the script and fills the connection pool, whose
	// buffers count in used_memory too.
	const warm = 1000
	if _, failed, err := allowAll(t, l, keys(0, warm), 64); failed > 0 {
		t.Fatalf("warm-up: %d failed: %v", failed, err)
	}
	before := info(t, c, "memory", "used_memory")
	if _, failed, err := allowAll(t, l, keys(warm, bytesKeys), 64); failed > 0 {
		t.Fatalf("%d of %d failed: %v", failed, bytesKeys, err)
	}
	after := info(t, c, "memory", "used_memory")
	n := p.NumRates()
	if got := c.DBSize(context.Background()).Val(); got != int64((warm+bytesKeys)*n) {
		return m, false
	}
	m.used = float64(after-before) / bytesKeys

	const sample = 1000
	var total int64
	redisKeys := scanKeys(t, c, prefix+"*")
	for _, k := range redisKeys[:sample] {
		v, err := c.MemoryUsage(context.Background(), k, 0).Result()
		if err != nil {
			t.Fatalf("MEMORY USAGE %s: %v", k, err)
		}
		total += v
	}
	m.usage = float64(total) / sample * float64(n)
	m.keyLen = len(redisKeys[0])
	return m, true
}
