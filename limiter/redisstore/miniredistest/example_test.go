package miniredistest

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// A service's test runs its limiter on the Redis store over miniredis,
// with a fake clock that crosses the window without sleeping.
func Example() {
	m, err := miniredis.Run() // miniredis.RunT(t) in a test
	if err != nil {
		panic(err)
	}
	defer m.Close()
	client := redis.NewClient(&redis.Options{Addr: m.Addr(), ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(client)
	if err != nil {
		panic(err)
	}
	defer store.Close()

	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)),
		limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for range 3 {
		d, _ := l.Allow(context.Background(), "client-1", 1)
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	clk.Advance(time.Minute)
	d, _ := l.Allow(context.Background(), "client-1", 1)
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 1 0s
	// true 0 0s
	// false 0 1m0s
	// true 1
}
