package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestRestartStartsAfresh pins what a restart of a Redis without
// persistence costs: a key that spent its budget gets a fresh one for
// the rest of the window (one extra window's budget at most, never a
// lockout), and the first decision after the restart reloads the script
// (EVALSHA answered NOSCRIPT, then one EVAL), with no error. It logs that
// decision's latency beside a steady one.
func TestRestartStartsAfresh(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	prefix := testPrefix(t)
	open := func() *Store {
		s, err := New(c, WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	const limit = 5
	p := limiter.MustPolicy("restart", limiter.PerMinute(limit))
	l := newLimiter(t, p, s, limitertest.New(t0.Add(10*time.Second)))
	ctx := context.Background()
	for i := range limit + 1 {
		d, err := l.Allow(ctx, "k", 1)
		if err != nil || d.Allowed != (i < limit) {
			t.Fatalf("call %d before the restart: got %v, %v; want allowed %v", i+1, d.Allowed, err, i < limit)
		}
	}
	steadyStart := time.Now()
	if _, err := l.Peek(ctx, "other", 1); err != nil {
		t.Fatal(err)
	}
	steady := time.Since(steadyStart)

	srv.Restart()
	// A fresh key: the spent one is in this replica's over-limit cache,
	// which a restart elsewhere cannot clear.
	start := time.Now()
	d, err := l.Allow(ctx, "fresh-after-restart", 1)
	first := time.Since(start)
	if err != nil || !d.Allowed {
		t.Fatalf("first decision after the restart: got %v, %v; want admitted", d.Allowed, err)
	}
	if n := commandCalls(t, c, "eval"); n != 1 {
		t.Fatalf("EVAL calls after the restart: got %d, want 1 (the NOSCRIPT reload)", n)
	}
	// Another replica, whose cache never saw the key full, finds its count
	// gone: a whole fresh budget in the same window.
	other := newLimiter(t, p, open(), limitertest.New(t0.Add(20*time.Second)))
	for i := range limit {
		if d, err := other.Allow(ctx, "k", 1); err != nil || !d.Allowed {
			t.Fatalf("call %d after the restart, same window: got %v, %v; want admitted", i+1, d.Allowed, err)
		}
	}
	t.Logf("first decision after the restart (NOSCRIPT, EVAL) took %v; a steady one %v", first.Round(time.Microsecond), steady.Round(time.Microsecond))
}
