package flood

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// t0 is a window-aligned instant: 2026-07-31 12:00:00 UTC.
var t0 = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// prefix is the key prefix of every store here: each test has a server of
// its own, so the default's length ("rl:") is what the figures carry.
const prefix = "rl:" // the store's default prefix

// startRedis starts a throwaway redis-server with maxmemory (a
// redis-server size, "6mb"; "" for none), an eviction policy and any
// further arguments, and returns a client of it.
func startRedis(t testing.TB, maxmemory, policy string, more ...string) *redis.Client {
	t.Helper()
	args := append([]string{"--maxmemory-policy", policy}, more...)
	if maxmemory != "" {
		args = append(args, "--maxmemory", maxmemory)
	}
	srv := redistest.StartServer(t, args...)
	return redistest.Client(t, srv.Addr())
}

// newStore builds a store on c with the default prefix and a timeout
// generous enough for a loaded machine under -race, closed when the test
// ends.
func newStore(t testing.TB, c redis.UniversalClient, opts ...redisstore.Option) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(c, append([]redisstore.Option{redisstore.WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newLimiter builds a limiter of p on s whose clock stands still at t0.
func newLimiter(t testing.TB, p *limiter.Policy, s limiter.Store) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(limitertest.New(t0)))
	if err != nil {
		t.Fatalf("limiter.New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// apiKey is the i-th minted API key: 32 hex digits, the length of a
// typical random key (128 bits).
func apiKey(i int) string { return fmt.Sprintf("%032x", i) }

// clientKey is the limiter key keyfunc.Header("X-Api-Key") makes of
// apiKey(i).
func clientKey(i int) string { return "hdr:X-Api-Key:" + apiKey(i) }

// allowAll asks l once for each of keys, from workers goroutines, and
// returns how many were admitted and the first error, if any, with how
// many failed.
func allowAll(t testing.TB, l *limiter.Limiter, keys []string, workers int) (admitted, failed int, first error) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range next {
				d, err := l.Allow(context.Background(), k, 1)
				mu.Lock()
				switch {
				case err != nil:
					failed++
					if first == nil {
						first = err
					}
				case d.Allowed:
					admitted++
				}
				mu.Unlock()
			}
		}()
	}
	for _, k := range keys {
		next <- k
	}
	close(next)
	wg.Wait()
	return admitted, failed, first
}

// info returns one integer field of INFO (such as used_memory,
// evicted_keys).
func info(t testing.TB, c *redis.Client, section, field string) int64 {
	t.Helper()
	text, err := c.Info(context.Background(), section).Result()
	if err != nil {
		t.Fatalf("INFO %s: %v", section, err)
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %s: %v", section, line, err)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s", section, field)
	return 0
}

// scanKeys returns the keys matching pattern, by SCAN.
func scanKeys(t testing.TB, c *redis.Client, pattern string) []string {
	t.Helper()
	var keys []string
	iter := c.Scan(context.Background(), 0, pattern, 1000).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN %s: %v", pattern, err)
	}
	return keys
}
