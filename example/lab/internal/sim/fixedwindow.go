package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// limiterModel runs the module's real limiter.Limiter over a real
// MemoryStore, with a fake clock set to each request's instant.
type limiterModel struct {
	lim   *limiter.Limiter
	store *limiter.MemoryStore
	clock *limitertest.Clock
	base  time.Time // the instant of the pattern's 0 s
}

func newFixedWindow(cfg Config, keys int) (Model, error) {
	r, err := cfg.longRate()
	if err != nil {
		return nil, err
	}
	p, err := limiter.NewPolicy("sim-fixed-window", r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return newLimiterModel(p, keys, cfg.base())
}

// newLimiterModel builds a limiter for p whose store holds every counter
// the pattern can need at once: one shard, so that the bound is not split
// unevenly, and room for one counter per key and window. A store that
// evicted would hand clients fresh budgets and falsify the table; Allow
// checks that it never did.
func newLimiterModel(p *limiter.Policy, keys int, base time.Time) (*limiterModel, error) {
	clock := limitertest.New(base)
	store, err := limiter.NewMemoryStore(
		limiter.WithShards(1),
		limiter.WithMaxKeys(max(keys*p.NumRates(), limiter.MaxWindows)),
		limiter.WithSweepInterval(0),
	)
	if err != nil {
		return nil, err
	}
	lim, err := limiter.New(p, limiter.WithClock(clock), limiter.WithStore(store))
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return &limiterModel{lim: lim, store: store, clock: clock, base: base}, nil
}

func (m *limiterModel) Allow(ctx context.Context, key string, at time.Duration) (bool, error) {
	m.clock.Set(m.base.Add(at))
	d, err := m.lim.Allow(ctx, key, 1)
	if err != nil {
		return false, err
	}
	if n := m.store.Stats().Evictions; n > 0 {
		return false, fmt.Errorf("sim: the memory store evicted %d counters; results would be wrong", n)
	}
	return d.Allowed, nil
}

func (m *limiterModel) Close() error {
	m.lim.Close()
	return m.store.Close()
}
