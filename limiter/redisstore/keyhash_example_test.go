package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// A store built WithKeyHash writes no client key to Redis, only its keyed
// hash; the limiter is still asked, and reset, by the clear key.
func ExampleWithKeyHash() {
	ctx := context.Background()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer c.Close()
	prefix := fmt.Sprintf("example:%d:", time.Now().UnixNano())
	secret := []byte("32 random bytes from the vault..") // in a service: from its secret store
	s, err := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.WithKeyHash(secret))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(100)), limiter.WithStore(s))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Allow(ctx, "203.0.113.7", 1); err != nil {
		log.Fatal(err)
	}
	var keys []string
	iter := c.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if iter.Err() != nil || len(keys) != 1 {
		log.Fatal(keys, iter.Err())
	}
	fmt.Println("address in Redis:", strings.Contains(keys[0], "203.0.113.7"))
	fmt.Println("hashed tag:", strings.HasPrefix(strings.TrimPrefix(keys[0], prefix), "{hmac:"))
	u, err := l.Usage(ctx, "203.0.113.7")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("used by the clear key:", u.Windows[0].Used)

	_, err = redisstore.New(c, redisstore.WithKeyHash([]byte("too short")))
	fmt.Println(err)
	// Output:
	// address in Redis: false
	// hashed tag: true
	// used by the clear key: 1
	// redisstore: invalid option: WithKeyHash: secret is 9 bytes, fewer than 16: draw it at random (crypto/rand) and keep it as the service keeps its other secrets
}
