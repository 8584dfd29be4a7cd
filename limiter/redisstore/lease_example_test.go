package redisstore_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// Two replicas lease quota for a hot key: most decisions are made
// locally, and together they still admit exactly the limit.
func ExampleWithLeases() {
	ctx := context.Background()
	p := limiter.MustPolicy("example", limiter.PerHour(100))
	prefix := fmt.Sprintf("example:%d:", time.Now().UnixNano())
	var (
		replicas []*limiter.Limiter
		stores   []*redisstore.Store
	)
	for range 2 {
		client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
		defer client.Close()
		store, err := redisstore.New(client, redisstore.WithPrefix(prefix),
			redisstore.WithLeases(0, 10)) // the default horizon; leases of at most 100/10
		if err != nil {
			log.Fatal(err)
		}
		defer store.Close()
		l, err := limiter.New(p, limiter.WithStore(store))
		if err != nil {
			log.Fatal(err)
		}
		replicas = append(replicas, l)
		stores = append(stores, store)
	}
	admitted := 0
	for i := range 300 {
		d, err := replicas[i%2].Allow(ctx, "hot", 1)
		if err != nil {
			log.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	st := stores[0].Stats()
	fmt.Printf("admitted %d of 300; replica 0 decided most locally: %v\n", admitted, st.Leased > st.RoundTrips)
	// Output:
	// admitted 100 of 300; replica 0 decided most locally: true
}
