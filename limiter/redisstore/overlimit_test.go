package redisstore

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestOverLimitCacheSkipsRedis: once a key is full in its window, later
// requests in that window are refused with no round trip (the server's own
// EVALSHA count does not move), with the same Decision Redis would give;
// the next window goes to Redis again.
func TestOverLimitCacheSkipsRedis(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("cache", limiter.PerMinute(3), limiter.PerSecond(2))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			srv := redistest.StartServer(t)
			c := redistest.Client(t, srv.Addr())
			if clock == serverClock {
				awaitServerWindow(t, c, time.Second)
			}
			clk := limitertest.New(t0.Add(100 * time.Millisecond))
			s := newStore(t, c, withClockSource(clock))
			if clock == serverClock {
				// Entries age on the monotonic clock: hold it still, as the
				// fake clock holds the application's.
				s.cache.mono = func() time.Duration { return 0 }
			}
			l := newLimiter(t, p, s, clk)
			for i := range 3 {
				if d, err := l.Allow(ctx, "k", 1); err != nil || d.Allowed != (i < 2) {
					t.Fatalf("call %d: %+v, %v", i, d, err)
				}
			}
			// The second call filled the one-second window: the third was
			// already answered by the cache.
			if s.Stats().Decisions != 2 || s.Stats().Cached != 1 {
				t.Fatalf("after 3 calls: %+v, want 2 decisions by Redis and 1 cached refusal", s.Stats())
			}
			trips, evals := s.Stats().RoundTrips, commandCalls(t, c, "evalsha")+commandCalls(t, c, "eval")
			var first limiter.Decision
			for i := range 100 {
				d, err := l.Allow(ctx, "k", 1)
				if err != nil || d.Allowed {
					t.Fatalf("cached call %d: %+v, %v", i, d, err)
				}
				if i == 0 {
					first = d
				}
			}
			if got := s.Stats().RoundTrips; got != trips {
				t.Fatalf("round trips for refusals of a full key: got %d more, want 0", got-trips)
			}
			if got := commandCalls(t, c, "evalsha") + commandCalls(t, c, "eval"); got != evals {
				t.Fatalf("server ran %d more scripts for cached refusals, want 0", got-evals)
			}
			if s.Stats().Cached != 101 {
				t.Fatalf("Stats.Cached: got %d, want 101", s.Stats().Cached)
			}
			if clock == appClock {
				// Same Decision as the script path: compare with Redis
				// itself, cache off.
				s2 := newStore(t, c, WithPrefix(s.cfg.prefix), WithOverLimitCache(0))
				want, err := s2.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: clk.Now(), Cost: 1})
				if err != nil {
					t.Fatal(err)
				}
				if !storetest.SameDecision(first, want) {
					t.Fatalf("cached refusal %+v, Redis's %+v", first, want)
				}
			}
			if clock == appClock {
				clk.Advance(time.Second) // the second window ends: Redis decides again
				if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Fatalf("next second: %+v, %v; want admitted (minute has 1 left)", d, err)
				}
				if s.Stats().RoundTrips != trips+1 {
					t.Fatalf("next second: round trips %d, want %d", s.Stats().RoundTrips, trips+1)
				}
			}
		})
	}
}

// TestOverLimitCacheBounded: the cache holds at most its size, however
// many keys go over their limit.
func TestOverLimitCacheBounded(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("bound", limiter.PerMinute(1))
	s := newStore(t, sharedClient(t), WithOverLimitCache(128))
	l := newLimiter(t, p, s, limitertest.New(t0))
	for i := range 1000 {
		if _, err := l.Allow(ctx, "k"+strconv.Itoa(i), 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.Stats().CachedKeys; n == 0 || n > 128 {
		t.Fatalf("cached keys after 1000 full keys: got %d, want 1..128", n)
	}
}

// TestResetRacingDecision: a decision whose reply lands after Reset (here
// Reset runs between its round trip and its note in the over-limit cache)
// cannot put the key back in the cache: once Reset has returned, the key's
// next request is admitted, as Redis holds no count.
func TestResetRacingDecision(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("resetrace", limiter.PerMinute(3))
	for _, mode := range []path{pathPlain, pathBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			clk := limitertest.New(t0)
			s := newStore(t, sharedClient(t), withPath(mode))
			l := newLimiter(t, p, s, clk)
			for range 2 {
				if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Fatalf("before: %+v, %v", d, err)
				}
			}
			s.replyHook = func() {
				s.replyHook = nil
				if err := s.Reset(ctx, "k", p, clk.Now()); err != nil {
					t.Errorf("Reset: %v", err)
				}
			}
			// The third request fills the window; Reset lands before its
			// reply is noted.
			if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
				t.Fatalf("racing request: %+v, %v", d, err)
			}
			if s.replyHook != nil {
				t.Fatal("the hook did not run")
			}
			if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
				t.Fatalf("after Reset: %+v, %v; want admitted (cached keys %d)", d, err, s.Stats().CachedKeys)
			}
		})
	}
}

// steppedClock is the system clock stepped back by a settable amount, as
// an NTP step leaves it: it still runs.
type steppedClock struct{ back atomic.Int64 }

func (c *steppedClock) Now() time.Time { return time.Now().Add(-time.Duration(c.back.Load())) }

// TestServerClockCacheIgnoresAppClock: under serverClock the over-limit
// cache times its entries on the monotonic clock from Redis's time, so an
// application clock stepped back by less than a window does not keep a
// key refused once Redis's window has ended. The test waits for the end of
// Redis's one-second window (under a second): Redis's clock cannot be
// moved from here.
func TestServerClockCacheIgnoresAppClock(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
	p := limiter.MustPolicy("cachestep", limiter.PerSecond(2))
	awaitServerWindow(t, c, time.Second)
	clk := &steppedClock{}
	s := newStore(t, c, withClockSource(serverClock))
	l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	for i := range 3 {
		if d, err := l.Allow(ctx, "k", 1); err != nil || d.Allowed != (i < 2) {
			t.Fatalf("call %d: %+v, %v", i, d, err)
		}
	}
	if s.Stats().CachedKeys != 1 {
		t.Fatalf("cached keys %d, want 1: the full key", s.Stats().CachedKeys)
	}
	tm := serverTime(t, c)
	clk.back.Store(int64(900 * time.Millisecond)) // the application's clock steps back
	awaitServerTime(t, c, nextServerWindow(tm, time.Second).Add(20*time.Millisecond))
	if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("Redis's window ended, app clock 900ms back: %+v, %v; want admitted", d, err)
	}
}
