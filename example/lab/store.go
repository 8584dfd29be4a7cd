package main

import (
	"context"
	"fmt"

	"github.com/fixedwindow/ratelimit/limiter"
)

// storeConfig names the store that keeps the lab server's counters.
type storeConfig struct {
	// Kind is "memory" or "redis".
	Kind string
	// RedisAddr is the Redis server's host:port, for Kind "redis".
	RedisAddr string
}

// openStore opens the store cfg names. The returned function releases it;
// call it once the server has stopped.
func openStore(_ context.Context, cfg storeConfig) (limiter.Store, func() error, error) {
	switch cfg.Kind {
	case "memory":
		s, err := limiter.NewMemoryStore()
		if err != nil {
			return nil, nil, fmt.Errorf("memory store: %w", err)
		}
		return s, s.Close, nil
	default:
		return nil, nil, fmt.Errorf("store %q is not available in this build", cfg.Kind)
	}
}
