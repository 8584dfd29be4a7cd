package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// storeConfig names the store that keeps the lab server's counters.
type storeConfig struct {
	// Kind is "memory" or "redis".
	Kind string
	// RedisAddr is the Redis server's host:port, for Kind "redis".
	RedisAddr string
}

// openStore opens the store cfg names. The returned function releases it;
// call it once the server has stopped. The store keeps no clock: it
// decides, sweeps and resets at the instants the limiter's clock gives it.
func openStore(_ context.Context, cfg storeConfig) (limiter.Store, func() error, error) {
	switch cfg.Kind {
	case "memory":
		s, err := limiter.NewMemoryStore()
		if err != nil {
			return nil, nil, fmt.Errorf("memory store: %w", err)
		}
		return s, s.Close, nil
	case "redis":
		// The store fails closed (its default): when Redis is away each
		// decision ends within the store's 100ms timeout with an error
		// wrapping redisstore.ErrUnavailable, which the middleware answers
		// with a 5xx, or admits under --fail-open. Redis is not pinged
		// here, so a server started while Redis is down serves (by that
		// policy) and recovers by itself when Redis comes up.
		c := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, ContextTimeoutEnabled: true})
		s, err := redisstore.New(c)
		if err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("redis store: %w", err)
		}
		return s, func() error { return errors.Join(s.Close(), c.Close()) }, nil
	default:
		return nil, nil, fmt.Errorf("store %q is not available in this build", cfg.Kind)
	}
}
