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

// Every decision waits until one replica holds it, so that it survives
// the loss of the master. A master without a replica (the test Redis
// here) acknowledges nothing: its decisions fail, named no_replica_ack.
func ExampleWithReplicaAcks() {
	client := redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	store, err := redisstore.New(client, redisstore.WithPrefix(fmt.Sprintf("example:%d:", time.Now().UnixNano())),
		redisstore.WithReplicaAcks(1, 20*time.Millisecond), // one replica, within 20ms of each round
		redisstore.WithTimeout(time.Second))                // above Redis's 100ms tick, which times WAIT out
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	l, err := limiter.New(limiter.MustPolicy("example", limiter.PerHour(100)), limiter.WithStore(store))
	if err != nil {
		log.Fatal(err)
	}
	_, err = l.Allow(context.Background(), "client-42", 1)
	var cause interface{ Reason() string }
	if errors.Is(err, redisstore.ErrUnavailable) && errors.As(err, &cause) {
		fmt.Println(cause.Reason())
	}
	// Output:
	// no_replica_ack
}
