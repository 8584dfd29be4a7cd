package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// labLimiter opens a lab store as serve does, closed when the test ends,
// and a limiter of p on it.
func labLimiter(t *testing.T, cfg storeConfig, p *limiter.Policy) (*limiter.Limiter, limiter.Store) {
	t.Helper()
	s, closeStore, err := openStore(context.Background(), cfg)
	if err != nil {
		t.Fatalf("openStore: %v", err)
	}
	t.Cleanup(func() {
		if err := closeStore(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	l, err := limiter.New(p, limiter.WithStore(s))
	if err != nil {
		t.Fatal(err)
	}
	return l, s
}

// TestOpenRedisStore: two lab stores on one Redis share one limit; with
// Redis gone a decision fails (ErrUnavailable) within the store's timeout;
// when Redis is back the same store decides again by itself.
func TestOpenRedisStore(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := context.Background()
	p := limiter.MustPolicy("lab", limiter.PerHour(3))
	var ls []*limiter.Limiter
	for range 2 {
		l, _ := labLimiter(t, storeConfig{Kind: "redis", RedisAddr: srv.Addr()}, p)
		ls = append(ls, l)
	}
	admitted := 0
	for i := range 6 {
		d, err := ls[i%2].Allow(ctx, "client", 1)
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 3 {
		t.Fatalf("two lab stores admitted %d of 6, want 3 (one shared limit)", admitted)
	}

	srv.Kill()
	start := time.Now()
	_, err := ls[0].Allow(ctx, "other", 1)
	if took := time.Since(start); !errors.Is(err, redisstore.ErrUnavailable) || took > time.Second {
		t.Fatalf("Redis gone: got %v after %v, want ErrUnavailable within the 100ms timeout (1s with slack)", err, took)
	}

	srv.Restart()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := ls[0].Allow(ctx, "other", 1); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no recovery within 5s of Redis coming back")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestOpenRedisStoreLease: --lease gives a store that leases quota to a
// hot key and still admits exactly the limit across two lab stores.
func TestOpenRedisStoreLease(t *testing.T) {
	srv := redistest.StartServer(t)
	ctx := context.Background()
	p := limiter.MustPolicy("lab", limiter.PerHour(640))
	var (
		ls     []*limiter.Limiter
		stores []*redisstore.Store
	)
	for range 2 {
		l, s := labLimiter(t, storeConfig{Kind: "redis", RedisAddr: srv.Addr(), Lease: true}, p)
		ls = append(ls, l)
		stores = append(stores, s.(*redisstore.Store))
	}
	admitted := 0
	for i := range 1000 {
		d, err := ls[i%2].Allow(ctx, "hot", 1)
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted > 640 || admitted < 640-2*10 {
		t.Fatalf("two leasing lab stores admitted %d of 1000, want in [620, 640]", admitted)
	}
	if stores[0].Stats().Leased == 0 {
		t.Fatal("no decision made from a lease")
	}
}
