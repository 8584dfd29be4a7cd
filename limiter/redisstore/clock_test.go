package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// twoReplicas returns two limiters on separate clients and stores sharing
// one prefix, with clocks a and b.
func twoReplicas(t *testing.T, p *limiter.Policy, a, b *limitertest.Clock, opts ...Option) [2]*limiter.Limiter {
	t.Helper()
	prefix := testPrefix(t)
	var ls [2]*limiter.Limiter
	for i, clk := range []*limitertest.Clock{a, b} {
		s, err := New(redistest.Client(t, redistest.SharedAddr),
			append([]Option{WithPrefix(prefix), WithTimeout(5 * time.Second)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ls[i] = newLimiter(t, p, s, clk)
	}
	return ls
}

// TestSkewedReplicasServerClock: with Redis's TIME, two replicas whose
// clocks differ by 300ms (and from Redis by months) share one window and
// one count exactly, and report the same reset.
func TestSkewedReplicasServerClock(t *testing.T) {
	const limit = 40
	p := limiter.MustPolicy("skew", limiter.PerHour(limit))
	a := limitertest.New(t0.Add(59*time.Minute + 59*time.Second + 800*time.Millisecond))
	b := limitertest.New(a.Now().Add(300 * time.Millisecond)) // across an hour boundary from a
	ls := twoReplicas(t, p, a, b, withClockSource(serverClock))
	got := fire(t, ls[:], "k", 200)
	if got != limit {
		t.Fatalf("admitted %d of 200, want exactly %d", got, limit)
	}
	da, err := ls[0].Peek(context.Background(), "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	db, err := ls[1].Peek(context.Background(), "k", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !da.ResetAt.Equal(db.ResetAt) || time.Until(da.ResetAt) > time.Hour+time.Minute {
		t.Fatalf("resets: %v and %v, want one, within the hour of Redis's clock", da.ResetAt, db.ResetAt)
	}
}

// TestSkewedReplicasAppClock shows appClock's failure mode, and its bound.
// Replica b runs 300ms ahead of a. Just before a boundary, a is still in
// window W while b is in W+1: the client gets W's budget through a and
// W+1's through b, one extra budget at the boundary and no more. Once a
// crosses too, both share W+1's count exactly.
func TestSkewedReplicasAppClock(t *testing.T) {
	const limit = 25
	p := limiter.MustPolicy("skew", limiter.PerMinute(limit))
	a := limitertest.New(t0.Add(59*time.Second + 800*time.Millisecond))
	b := limitertest.New(a.Now().Add(300 * time.Millisecond))
	ls := twoReplicas(t, p, a, b)
	for _, tc := range []struct {
		name    string
		replica int
		want    int
	}{
		{"a_spends_window_W", 0, limit},
		{"b_spends_window_W+1", 1, limit},
	} {
		if got := admitted(t, ls[tc.replica], "k", 2*limit, nil); got != tc.want {
			t.Fatalf("%s: admitted %d, want %d", tc.name, got, tc.want)
		}
	}
	a.Advance(300 * time.Millisecond) // a reaches W+1
	if got := admitted(t, ls[0], "k", limit, nil); got != 0 {
		t.Fatalf("a in W+1 after b spent it: admitted %d, want 0", got)
	}
	// Within one window both replicas share exactly one budget.
	a.Advance(time.Minute)
	b.Advance(time.Minute)
	if got := fire(t, ls[:], "k2", 200); got != limit {
		t.Fatalf("same window, skewed clocks: admitted %d of 200, want %d", got, limit)
	}
}
