package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// Two replicas, each with its own client and limiter, share one limit
// through Redis.
func Example() {
	ctx := context.Background()
	p := limiter.MustPolicy("example", limiter.PerHour(3))
	prefix := fmt.Sprintf("example:%d:", time.Now().UnixNano())
	var replicas []*limiter.Limiter
	for range 2 {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
		defer c.Close()
		s, err := redisstore.New(c, redisstore.WithPrefix(prefix))
		if err != nil {
			log.Fatal(err)
		}
		defer s.Close()
		l, err := limiter.New(p, limiter.WithStore(s))
		if err != nil {
			log.Fatal(err)
		}
		replicas = append(replicas, l)
	}
	for i := range 5 {
		d, err := replicas[i%2].Allow(ctx, "client-42", 1)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("replica %d: allowed=%v remaining=%d\n", i%2, d.Allowed, d.Remaining)
	}
	// Output:
	// replica 0: allowed=true remaining=2
	// replica 1: allowed=true remaining=1
	// replica 0: allowed=true remaining=0
	// replica 1: allowed=false remaining=0
	// replica 0: allowed=false remaining=0
}

// With Redis unreachable, a store answers an error wrapping ErrUnavailable
// within the timeout by default; one built WithFailOpen admits.
func ExampleWithFailOpen() {
	ctx := context.Background()
	p := limiter.MustPolicy("example", limiter.PerHour(3))
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer c.Close()
	for _, mode := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"closed", nil},
		{"open", []redisstore.Option{redisstore.WithFailOpen()}},
	} {
		s, err := redisstore.New(c, append(mode.opts, redisstore.WithTimeout(50*time.Millisecond))...)
		if err != nil {
			log.Fatal(err)
		}
		d, err := s.Take(ctx, limiter.Request{Key: "k", Policy: p, Now: time.Now(), Cost: 1})
		fmt.Printf("%s: allowed=%v unavailable=%v\n", mode.name, d.Allowed, errors.Is(err, redisstore.ErrUnavailable))
		s.Close()
	}
	// Output:
	// closed: allowed=false unavailable=true
	// open: allowed=true unavailable=false
}
