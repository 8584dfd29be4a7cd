package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

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
	// Lease, for Kind "redis", lets the store lease quota to hot keys
	// (redisstore.WithLeases with its defaults).
	Lease bool
}

// redisPingTimeout bounds the startup check of --store redis.
const redisPingTimeout = 2 * time.Second

// openStore opens the store cfg names. The returned function releases it;
// call it once the server has stopped. The store keeps no clock: it
// decides, sweeps and resets at the instants the limiter's clock gives it.
func openStore(ctx context.Context, cfg storeConfig) (limiter.Store, func() error, error) {
	switch cfg.Kind {
	case "memory":
		s, err := limiter.NewMemoryStore()
		if err != nil {
			return nil, nil, fmt.Errorf("memory store: %w", err)
		}
		return s, s.Close, nil
	case "redis":
		// A lab should not serve a broken demo: Redis must answer PING
		// before the server starts, or the command ends with one line
		// naming the address and the cause (exit code 1). Once serving,
		// the store fails closed (its default): when Redis goes away each
		// decision ends within the store's 100ms timeout with an error
		// wrapping redisstore.ErrUnavailable, which the middleware answers
		// with a 5xx, or admits under --fail-open, and it recovers by
		// itself when Redis comes back.
		if err := checkRedis(ctx, cfg.RedisAddr); err != nil {
			return nil, nil, err
		}
		c := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, ContextTimeoutEnabled: true})
		var opts []redisstore.Option
		if cfg.Lease {
			opts = append(opts, redisstore.WithLeases(0, 0))
		}
		s, err := redisstore.New(c, opts...)
		if err != nil {
			c.Close()
			return nil, nil, fmt.Errorf("redis store: %w", err)
		}
		return s, func() error { return errors.Join(s.Close(), c.Close()) }, nil
	default:
		return nil, nil, fmt.Errorf("store %q is not available in this build", cfg.Kind)
	}
}

// checkRedis makes sure a Redis answers PING at addr within
// redisPingTimeout. It dials first on its own, so that an address where
// nothing listens fails with the dialer's one error rather than
// go-redis's pool retrying and logging each attempt.
func checkRedis(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, redisPingTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("--redis-addr %s: no Redis answers there: %w", addr, err)
	}
	conn.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, MaxRetries: -1})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("--redis-addr %s: Redis does not answer PING: %w", addr, err)
	}
	return nil
}
