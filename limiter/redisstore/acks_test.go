package redisstore

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestReplicaAcksOptions: WithReplicaAcks is checked in New.
func TestReplicaAcksOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, tc := range []struct {
		name string
		opts []Option
		ok   bool
	}{
		{"one_replica_50ms", []Option{WithReplicaAcks(1, 50*time.Millisecond)}, true},
		{"two_replicas_99ms", []Option{WithReplicaAcks(2, 99*time.Millisecond)}, true},
		{"no_replica", []Option{WithReplicaAcks(0, 50*time.Millisecond)}, false},
		{"negative", []Option{WithReplicaAcks(-1, 50*time.Millisecond)}, false},
		{"no_timeout", []Option{WithReplicaAcks(1, 0)}, false},
		{"under_a_millisecond", []Option{WithReplicaAcks(1, 500*time.Microsecond)}, false},
		{"not_whole_milliseconds", []Option{WithReplicaAcks(1, 1500*time.Microsecond)}, false},
		{"as_long_as_the_timeout", []Option{WithReplicaAcks(1, 100*time.Millisecond)}, false},
		{"longer_than_a_set_timeout", []Option{WithTimeout(time.Second), WithReplicaAcks(1, 2*time.Second)}, false},
		{"within_a_set_timeout", []Option{WithReplicaAcks(1, 500*time.Millisecond), WithTimeout(time.Second)}, true},
		{"plain_path", []Option{withPath(pathPlain), WithReplicaAcks(1, 50*time.Millisecond)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(c, tc.opts...)
			if err == nil {
				s.Close()
			}
			if got := err == nil; got != tc.ok || err != nil && !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New: got %v, want ok %v (or ErrInvalidOption)", err, tc.ok)
			}
		})
	}
}

// replicated starts a master with replicas replicas, each in sync, and
// returns them.
func replicated(t testing.TB, replicas int) (master *redistest.Server, reps []*redistest.Server) {
	t.Helper()
	master = redistest.StartServer(t, "--repl-diskless-sync-delay", "0")
	for range replicas {
		reps = append(reps, redistest.StartServer(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port())))
	}
	mc := redistest.Client(t, master.Addr())
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := mc.Info(context.Background(), "replication").Result()
		if err == nil && strings.Count(info, "state=online") == replicas {
			redistest.AwaitStreaming(t, master.Addr(), replicas)
			return master, reps
		}
		if time.Now().After(deadline) {
			t.Fatalf("replicas not in sync: %v\n%s", err, info)
		}
		time.Sleep(20 * time.Millisecond) // the replicas' sync, not a window
	}
}

// TestReplicaAcks: with WithReplicaAcks(1, ...), every answer the store
// gives (a decision, a settle, a refund, a Reset, an in-flight slot) is
// on a replica when it returns; the store keeps serving while one replica of
// two remains; with none it fails its decisions, named no_replica_ack,
// and its breaker then answers at once.
func TestReplicaAcks(t *testing.T) {
	master, reps := replicated(t, 2)
	ctx := context.Background()
	// The ack timeout: long enough that a replica on a loaded machine
	// (make test runs packages side by side) acknowledges within it.
	const ackWait = 400 * time.Millisecond
	s := newStore(t, redistest.Client(t, master.Addr()), WithReplicaAcks(1, ackWait), WithTimeout(2*time.Second),
		WithOverLimitCache(0), WithBreaker(3, time.Hour))
	p := limiter.MustPolicy("acks", limiter.PerHour(100))
	l := newLimiter(t, p, s, limitertest.New(t0))
	clients := []*redis.Client{redistest.Client(t, reps[0].Addr()), redistest.Client(t, reps[1].Addr())}
	// held returns the count each replica holds: one of the two has
	// acknowledged each answer, the other may lag.
	held := func() []int64 {
		t.Helper()
		var n []int64
		for _, c := range clients {
			v, err := c.Get(ctx, keyOf(s, "k", p, 0, t0)).Int64()
			if err != nil && err != redis.Nil {
				t.Fatal(err)
			}
			n = append(n, v)
		}
		return n
	}
	for i := int64(1); i <= 20; i++ {
		d, err := l.Allow(ctx, "k", 1)
		if err != nil || !d.Allowed {
			t.Fatalf("decision %d: got %+v, %v; want admitted", i, d, err)
		}
		if got := held(); !slices.Contains(got, i) {
			t.Fatalf("decision %d answered: the replicas hold %v, want one at %d", i, got, i)
		}
	}
	rd, err := l.Allow(ctx, "k", 5)
	if err != nil || !rd.Allowed {
		t.Fatalf("reserve: %+v, %v", rd, err)
	}
	if err := l.Settle(ctx, "k", 5, 9, rd); err != nil {
		t.Fatal(err)
	}
	if got := held(); !slices.Contains(got, 29) {
		t.Fatalf("settled: the replicas hold %v, want one at 29", got)
	}
	d, err := l.Allow(ctx, "k", 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Refund(ctx, "k", 3, d); err != nil {
		t.Fatal(err)
	}
	if got := held(); !slices.Contains(got, 29) {
		t.Fatalf("refunded: the replicas hold %v, want one at 29", got)
	}
	f, err := limiter.NewInFlight("acks-cap", 2, limiter.WithStore(s))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, release, err := f.Acquire(ctx, "k"); err != nil || release == nil {
		t.Fatalf("Acquire: %v", err)
	} else {
		var most int64
		for _, c := range clients {
			n, err := c.ZCard(ctx, slotKey(s.cfg.prefix, "k", f.Policy())).Result()
			if err != nil {
				t.Fatal(err)
			}
			most = max(most, n)
		}
		if most != 1 {
			t.Fatalf("slot held: the replicas hold at most %d slots, want one holding 1", most)
		}
		release()
	}
	if err := l.Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if got := held(); !slices.Contains(got, 0) {
		t.Fatalf("reset: the replicas hold %v, want one at 0", got)
	}

	reps[0].Kill()
	for i := range 5 {
		if _, err := l.Allow(ctx, "k", 1); err != nil {
			t.Fatalf("decision %d with one replica of two left: %v", i, err)
		}
	}

	reps[1].Kill()
	for i := range 3 {
		start := time.Now()
		_, err := l.Allow(ctx, "k", 1)
		if !errors.Is(err, ErrUnavailable) || reasonOf(err) != "no_replica_ack" {
			t.Fatalf("decision %d with no replica: got %v, want ErrUnavailable, reason no_replica_ack", i, err)
		}
		if took := time.Since(start); took < ackWait {
			t.Fatalf("decision %d with no replica failed in %v, before the ack timeout", i, took)
		}
	}
	start := time.Now()
	_, err = l.Allow(ctx, "k", 1)
	if !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("after 3 rounds unacknowledged: got %v, want the breaker open", err)
	}
	if took := time.Since(start); took > ackWait/4 {
		t.Fatalf("the open breaker answered in %v, want at once", took)
	}
}
