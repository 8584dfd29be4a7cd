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
	// Clock is the limiter's clock, which the store's own time-keeping
	// (the memory store's sweep, the Redis store's Reset) must share; nil
	// means the system clock.
	Clock limiter.Clock
}

// openStore opens the store cfg names. The returned function releases it;
// call it once the server has stopped.
func openStore(_ context.Context, cfg storeConfig) (limiter.Store, func() error, error) {
	clk := cfg.Clock
	if clk == nil {
		clk = limiter.SystemClock{}
	}
	switch cfg.Kind {
	case "memory":
		s, err := limiter.NewMemoryStore(limiter.WithMemoryClock(clk))
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
		c := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, ContextTimeoutEnabled: true, MaxRetries: -1})
		s, err := redisstore.New(c, redisstore.WithClock(clk))
		if err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("redis store: %w", err)
		}
		return s, func() error { return errors.Join(s.Close(), c.Close()) }, nil
	default:
		return nil, nil, fmt.Errorf("store %q is not available in this build", cfg.Kind)
	}
}
