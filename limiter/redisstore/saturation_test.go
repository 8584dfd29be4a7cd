package redisstore

import (
	"context"
	"fmt"
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
// smaller than the load, so that decisions queue inside the client (its
// pool, the batch queue). Time spent queued is not Redis failing: the
// breaker stays closed, whatever the failure policy answers for calls
// that run out of time in the queue.
func TestBreakerClosedAtSaturation(t *testing.T) {
	const callers = 96
	p := limiter.MustPolicy("saturation", limiter.PerHour(1<<30))
	for _, mode := range []path{pathBatch, pathPlain} {
		t.Run(mode.String(), func(t *testing.T) {
			// Redis answers each command in about 10 ms (a distant
			// network's round trip); 96 callers on 4 connections queue about
			// 240 ms for one, beyond the 200 ms timeout, while every round
			// trip itself takes a twentieth of it.
			proxy := redistest.StartProxy(t, redistest.SharedAddr)
			proxy.SetDelay(10 * time.Millisecond)
			c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: true,
				PoolSize: 4})
			t.Cleanup(func() { c.Close() })
			var ev events
			s := newStore(t, c, withPath(mode), WithTimeout(200*time.Millisecond), WithObserver(ev.observe))
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
			var (
				wg      sync.WaitGroup
				stop    atomic.Bool
				decided atomic.Int64
			)
			for i := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := fmt.Sprintf("c%d", i)
					for !stop.Load() {
						if _, err := l.Allow(context.Background(), key, 1); err == nil {
							decided.Add(1)
						}
					}
				}()
			}
			time.Sleep(1500 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			st := s.Stats()
			t.Logf("%v: %+v", mode, st)
			if st.Decisions == 0 {
				t.Fatal("no decision made by Redis")
			}
			if ev.has(Healthy, Unavailable) || s.Health() != Healthy {
				t.Fatalf("healthy Redis at saturation: health %v, events %+v; want the breaker closed", s.Health(), ev.got)
			}
		})
	}
}
