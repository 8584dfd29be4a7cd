package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestFailLocalCountsOutliveRecovery: FailLocal's in-memory counts are not
// forgotten when Redis answers again, as FailLocal's doc says: a second
// outage in the same window finds the local budget spent, so a flapping
// Redis cannot hand out a fresh one per outage.
func TestFailLocalCountsOutliveRecovery(t *testing.T) {
	const timeout = 50 * time.Millisecond
	p := limiter.MustPolicy("faillocal", limiter.PerHour(4))
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	clk := limitertest.New(t0)
	s := newStore(t, redistest.Client(t, proxy.Addr()), WithFailLocal(1), WithTimeout(timeout),
		WithBreaker(100, time.Second), WithOverLimitCache(0))
	l := newLimiter(t, p, s, clk)
	if got := admitted(t, l, "warm", 1, nil); got != 1 {
		t.Fatalf("healthy: admitted %d of 1", got)
	}
	proxy.SetDelay(time.Second) // Redis too slow: FailLocal answers
	if got := admitted(t, l, "k", 6, nil); got != 4 {
		t.Fatalf("first outage: admitted %d of 6 locally, want 4", got)
	}
	if d := s.Stats().Degraded; d != 6 {
		t.Fatalf("first outage: %d degraded decisions, want 6", d)
	}
	proxy.SetDelay(0)
	deadline := time.Now().Add(5 * time.Second)
	for before := s.Stats().Decisions; s.Stats().Decisions == before; {
		if time.Now().After(deadline) {
			t.Fatalf("Redis did not answer again within 5s: %+v", s.Stats())
		}
		_, _ = l.Allow(context.Background(), "probe", 1)
	}
	// A probe still delayed when the delay was lifted may have degraded
	// too: count the second outage's from here.
	before := s.Stats().Degraded
	proxy.SetDelay(time.Second)
	if got := admitted(t, l, "k", 3, nil); got != 0 {
		t.Fatalf("second outage in the same window: admitted %d of 3 locally, want 0 (the local budget was spent)", got)
	}
	if d := s.Stats().Degraded - before; d != 3 {
		t.Fatalf("second outage: %d degraded decisions, want 3", d)
	}
}
