package miniredistest

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// t0 is a window-aligned instant: 2026-07-31 12:00:00 UTC.
var t0 = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// allowN sends n requests of cost 1 for key and returns how many were
// admitted and the last decision, failing the test on an error.
func allowN(t *testing.T, l *limiter.Limiter, key string, n int) (int, limiter.Decision) {
	t.Helper()
	admitted := 0
	var d limiter.Decision
	for i := range n {
		var err error
		d, err = l.Allow(context.Background(), key, 1)
		if err != nil {
			t.Fatalf("Allow %d of %d: %v", i+1, n, err)
		}
		if d.Allowed {
			admitted++
		}
	}
	return admitted, d
}

// Ping passes on miniredis with no warning (it refuses CONFIG GET, so
// its memory policy is not judged), and so do the decisions after it:
// before the scripts lost bit.bxor, Ping's probe passed and the second
// decision of a window failed.
func TestPing(t *testing.T) {
	s, _ := newStore(t)
	warnings, err := s.Ping(context.Background())
	if err != nil || len(warnings) != 0 {
		t.Fatalf("Ping: %q, %v; want no warning and no error", warnings, err)
	}
	l := storetest.NewLimiter(t, limiter.MustPolicy("ping", limiter.PerSecond(5)), s, limitertest.New(t0))
	if n, _ := allowN(t, l, "k", 7); n != 5 {
		t.Fatalf("%d of 7 admitted, want 5", n)
	}
}

// A server that has forgotten the scripts (SCRIPT FLUSH; a restart)
// answers NOSCRIPT to EVALSHA, and the store sends EVAL: no decision,
// settle or slot fails and none is charged twice.
func TestScriptsForgotten(t *testing.T) {
	s, m := newStore(t)
	ctx := context.Background()
	clk := limitertest.New(t0)
	l := storetest.NewLimiter(t, limiter.MustPolicy("flush", limiter.PerSecond(4)), s, clk)
	f, err := limiter.NewInFlight("flush-cap", 1, limiter.WithStore(s), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer c.Close()
	flush := func() {
		t.Helper()
		if err := c.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
	}
	if n, _ := allowN(t, l, "k", 1); n != 1 {
		t.Fatal("first request refused")
	}
	flush()
	d, err := l.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed || d.Remaining != 2 {
		t.Fatalf("after SCRIPT FLUSH: %+v, %v; want admitted, 2 left", d, err)
	}
	flush()
	if err := l.Settle(ctx, "k", 1, 3, d); err != nil {
		t.Fatalf("Settle after SCRIPT FLUSH: %v", err)
	}
	if n, last := allowN(t, l, "k", 2); n != 0 || last.Remaining != 0 {
		t.Fatalf("after a settle of 3: %d admitted (%+v), want none: 4 used", n, last)
	}
	flush()
	if d, release, err := f.Acquire(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("Acquire after SCRIPT FLUSH: %+v, %v", d, err)
	} else {
		flush()
		release()
	}
	if u, err := f.Usage(ctx, "k"); err != nil || u.Held != 0 {
		t.Fatalf("after the release: %+v, %v; want none held", u, err)
	}
}

// Under WithServerClock the store decides by TIME, which is miniredis's
// clock: the wall clock, or the instant SetTime fixed. A test moves
// m.SetTime as it moves a fake clock; the limiter's own clock is not read
// for the window. The over-limit cache keeps a refusal for its
// RetryAfter on the local clock, which SetTime does not move: a test
// that moves miniredis's clock turns it off.
func TestServerClockIsMiniredisClock(t *testing.T) {
	s, m := newStore(t, redisstore.WithServerClock(), redisstore.WithOverLimitCache(0))
	// The limiter's clock is a day off: the decisions follow miniredis's.
	l := storetest.NewLimiter(t, limiter.MustPolicy("server", limiter.PerSecond(2)), s, limitertest.New(t0.Add(24*time.Hour)))
	m.SetTime(t0.Add(300 * time.Millisecond))
	n, d := allowN(t, l, "k", 3)
	// The retry is 700 ms less what the limiter measured on its way out
	// (a few µs here): within 10 ms of 700 ms.
	if n != 2 || !d.ResetAt.Equal(t0.Add(time.Second)) || d.RetryAfter > 700*time.Millisecond || d.RetryAfter < 690*time.Millisecond {
		t.Fatalf("at 12:00:00.300: %d admitted, last %+v; want 2, a reset at 12:00:01 in 700ms", n, d)
	}
	m.SetTime(t0.Add(999 * time.Millisecond))
	if n, _ := allowN(t, l, "k", 1); n != 0 {
		t.Fatal("at 12:00:00.999: admitted, want refused: the window is spent")
	}
	m.SetTime(t0.Add(time.Second))
	n, d = allowN(t, l, "k", 3)
	if n != 2 || !d.ResetAt.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("at 12:00:01: %d admitted, last %+v; want 2, a reset at 12:00:02", n, d)
	}
	u, err := l.Usage(context.Background(), "k")
	if err != nil || !u.At.Equal(t0.Add(time.Second)) || u.Windows[0].Used != 2 {
		t.Fatalf("Usage: %+v, %v; want read at 12:00:01 (TIME), 2 used", u, err)
	}
}
