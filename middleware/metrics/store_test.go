package metrics_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// openBreaker points a Redis store observed by observe at a port where
// nothing listens, breaker set to open at the first failure, makes one
// decision, and returns the node whose breaker opened.
func openBreaker(t *testing.T, observe func(redisstore.Event)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // connections are now refused
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer client.Close()
	opened := make(chan string, 1)
	store, err := redisstore.New(client, redisstore.WithBreaker(1, time.Hour), redisstore.WithObserver(func(e redisstore.Event) {
		observe(e)
		if e.Kind == redisstore.HealthChanged && e.To == redisstore.Unavailable {
			select {
			case opened <- e.Node:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(5)), limiter.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Allow(context.Background(), "192.0.2.1", 1); !errors.Is(err, redisstore.ErrUnavailable) {
		t.Fatalf("Allow with Redis away: error %v, want ErrUnavailable", err)
	}
	select {
	case node := <-opened:
		return node
	case <-time.After(5 * time.Second):
		t.Fatal("the breaker did not report opening")
		return ""
	}
}
