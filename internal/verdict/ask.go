package verdict

import (
	"context"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// A Limiter decides and charges, as limiter.Limiter.Allow does
// (middleware.Limiter's decision method).
type Limiter interface {
	Allow(ctx context.Context, key string, cost int64) (limiter.Decision, error)
}

// A Clocked limiter says which clock its decisions are made by and decides
// at an instant read from it, as *limiter.Limiter does.
type Clocked interface {
	Clock() limiter.Clock
	AllowAt(ctx context.Context, key string, cost int64, now time.Time) (limiter.Decision, error)
}

// Ask asks lim for one decision. A clocked limiter (clocked is lim, or
// nil) decides at one reading of its own clock, which also times it and is
// returned to date a decision that carries no instant of its own. Any
// other limiter is timed by the system clock, and only when timed is set;
// its instant is then that reading, else zero.
func Ask(ctx context.Context, lim Limiter, clocked Clocked, key string, cost int64, timed bool) (d limiter.Decision, at time.Time, took time.Duration, err error) {
	if clocked != nil {
		clk := clocked.Clock()
		at = clk.Now()
		d, err = clocked.AllowAt(ctx, key, cost, at)
		if timed {
			took = clk.Now().Sub(at)
		}
		return d, at, took, err
	}
	if timed {
		at = time.Now()
	}
	d, err = lim.Allow(ctx, key, cost)
	if timed {
		took = time.Since(at)
	}
	return d, at, took, err
}
