package redisstore

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestBreakerClosedAtSaturation: 96 callers without pause (bench/redis's
// load is 64) on a healthy Redis, through a client whose pool is much
// smaller than the load, so that decisions queue (the batch queue; for
// Plain, the gate sized by the pools, outside the breaker). Time spent
// queued is not Redis failing: the breaker stays closed, whatever the
// failure policy answers for calls that run out of time in the queue.
func TestBreakerClosedAtSaturation(t *testing.T) {
	const callers = 96
	p := limiter.MustPolicy("saturation", limiter.PerHour(1<<30))
	// Each row's client sends to one proxy through a pool of 4.
	rows := []struct {
		name   string
		client func(addr string) redis.UniversalClient
		mode   path
	}{
		{"batch", func(addr string) redis.UniversalClient {
			return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 4})
		}, pathBatch},
		// A Ring batches per shard, the path users get.
		{"ring", func(addr string) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr},
				ContextTimeoutEnabled: true, PoolSize: 4})
		}, pathByClient},
		// Plain on a Ring, with the gate sized by its one shard's pool.
		{"ring_plain", func(addr string) redis.UniversalClient {
			return redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": addr},
				ContextTimeoutEnabled: true, PoolSize: 4})
		}, pathPlain},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			// Redis answers each command in about 10 ms (a distant
			// network's round trip); 96 callers on 4 connections queue about
			// 240 ms for one, beyond the 200 ms timeout, while every round
			// trip itself takes a twentieth of it.
			proxy := redistest.StartProxy(t, redistest.SharedAddr)
			proxy.SetDelay(10 * time.Millisecond)
			c := row.client(proxy.Addr())
			t.Cleanup(func() { c.Close() })
			var ev events
			s := newStore(t, c, withPath(row.mode), WithTimeout(200*time.Millisecond), WithObserver(ev.observe))
			if s.path == pathPlain && s.batch.maxInFlight != 4 {
				t.Fatalf("Plain on a pool of 4: %d rounds in flight at most, want 4", s.batch.maxInFlight)
			}
			l := newLimiter(t, p, s, limitertest.New(t0))
			// Dial the pool's connections first (each costs several round
			// trips), as a running service has them.
			var dial sync.WaitGroup
			for range 4 {
				dial.Add(1)
				go func() {
					defer dial.Done()
					if err := c.Ping(context.Background()).Err(); err != nil {
						t.Error(err)
					}
				}()
			}
			dial.Wait()
			// The load runs until every caller has been answered
			// (decided, or run out of time) turns times: the queue has
			// turned over that often at saturation, however slow it is.
			const turns = 5
			var (
				wg      sync.WaitGroup
				stop    atomic.Bool
				decided atomic.Int64
				waiting atomic.Int64
				turned  = make(chan struct{})
			)
			waiting.Store(callers)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("c%d", i)
					for n := 1; !stop.Load(); n++ {
						if _, err := l.Allow(context.Background(), key, 1); err == nil {
							decided.Add(1)
						}
						if n == turns && waiting.Add(-1) == 0 {
							close(turned)
						}
					}
				}()
			}
			ok := closedWithin(turned, 10*time.Second)
			stop.Store(true)
			wg.Wait()
			if !ok {
				t.Fatalf("%d of %d callers answered fewer than %d times in 10 s: %+v", waiting.Load(), callers, turns, s.Stats())
			}
			st := s.Stats()
			t.Logf("%s (%v): %+v", row.name, s.path, st)
			if st.Decisions == 0 {
				t.Fatal("no decision made by Redis")
			}
			if ev.has(Failing, Unavailable) || worst(s.Health()) == Unavailable {
				t.Fatalf("healthy Redis at saturation: health %v, events %+v; want the breaker closed", s.Health(), ev.got)
			}
		})
	}
}

// TestPoolSize: the gate of Plain round trips holds as many as the
// client's pools hold connections: a single client's pool, a Ring's pool
// per shard (go-redis's default when unset) times its shards.
func TestPoolSize(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client redis.UniversalClient
		want   int
	}{
		{"client", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 4}), 4},
		{"client_default", redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), 10 * runtime.GOMAXPROCS(0)},
		{"ring_one_shard", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}, PoolSize: 4}), 4},
		{"ring_three_shards", redis.NewRing(&redis.RingOptions{PoolSize: 4,
			Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2", "c": "127.0.0.1:3"}}), 12},
		{"ring_default", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1", "b": "127.0.0.1:2"}}),
			2 * 10 * runtime.GOMAXPROCS(0)},
		{"cluster", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.client.Close()
			if got := poolSize(tc.client); got != tc.want {
				t.Fatalf("poolSize(%s) = %d, want %d", tc.name, got, tc.want)
			}
		})
	}
}
