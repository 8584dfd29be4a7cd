package sim

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// A Model decides requests of a pattern in time order.
type Model interface {
	// Allow decides one request of key at instant at (an offset from the
	// Config's Start, the Unix epoch by default). Instants never decrease
	// from one call to the next.
	Allow(ctx context.Context, key string, at time.Duration) (bool, error)
	// Close releases what the model holds.
	Close() error
}

// The limiters Simulate knows, in the order of the lab's table: the
// module's own limiters first, then the reference models.
const (
	None        = "none"
	FixedWindow = "fixed-window"
	Layered     = "layered"
	SlidingLog  = "sliding-log"
	TokenBucket = "token-bucket"
)

// Names returns every limiter name, in table order.
func Names() []string { return []string{None, FixedWindow, Layered, SlidingLog, TokenBucket} }

// New returns the model called name enforcing cfg for up to keys distinct
// keys (the real limiter's store is sized by it so that it never evicts).
func New(name string, cfg Config, keys int) (Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch name {
	case None:
		return noLimit{}, nil
	case FixedWindow:
		return newFixedWindow(cfg, keys)
	case Layered:
		return newLayered(cfg, keys)
	case SlidingLog, TokenBucket:
		if cfg.Calendar != "" {
			return nil, fmt.Errorf("%w: %s has no calendar: it counts per window, not per %s", ErrInvalidConfig, name, cfg.Calendar)
		}
		if name == SlidingLog {
			return newSlidingLog(cfg), nil
		}
		return newTokenBucket(cfg), nil
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownLimiter, name, strings.Join(Names(), ", "))
}

// noLimit admits everything: the traffic the backend would see without a
// limiter.
type noLimit struct{}

func (noLimit) Allow(context.Context, string, time.Duration) (bool, error) { return true, nil }
func (noLimit) Close() error                                               { return nil }
