package middleware

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// A PlanCache keeps the resolutions of WithPlans: for each plan and zone
// a lookup answers, the limiters its rates and caps apply, derived once
// (limiter.Limiter.For) and looked up without a lock. A resolution is
// kept by the plan's contents, never its address: a fresh *Plan per
// request that equals an earlier one finds its resolution, and a new
// *Plan of other limits takes effect at once (a Plan in use must not be
// written: see limiter.Plan). Past its bound each new
// resolution evicts one not used lately, so that a request costs the
// same whatever the number of plans and zones in use; an evicted
// resolution costs its next request a resolution, never a count, which
// lives in the store.
//
// Every middleware with WithPlans keeps a PlanCache of its own, of
// 65,536 resolutions, unless WithPlanCache gives it one: to bound
// several middlewares' resolutions together (and a gRPC interceptor's:
// grpclimit.WithPlanCache), or to watch them (Stats, which
// middleware/metrics and middleware/otelmetrics export). The zero
// PlanCache is not usable: call NewPlanCache.
type PlanCache struct {
	kept *verdict.Kept
}

func init() {
	verdict.PlanCacheKept = func(c any) *verdict.Kept { return c.(*PlanCache).kept }
}

// NewPlanCache returns a PlanCache of at most n resolutions, n at least
// 8 (rounded down to a multiple of 8). docs/performance.md gives the
// memory each takes.
func NewPlanCache(n int) (*PlanCache, error) {
	if n < 8 {
		return nil, fmt.Errorf("%w: NewPlanCache(%d): keep at least 8 resolutions", ErrInvalidOption, n)
	}
	return &PlanCache{kept: verdict.NewKept(n)}, nil
}

// PlanCacheStats are a PlanCache's counts since it was made.
type PlanCacheStats struct {
	// Kept is how many resolutions it keeps now; Bound the most it keeps.
	Kept, Bound int64
	// Hits and Misses count the lookups of a plan and zone that found
	// its resolution kept and those that did not (which then resolve
	// it, and keep it unless it cannot apply). A plan that cannot be
	// kept (nil, or limits that cannot apply) counts as neither.
	Hits, Misses int64
}

// Stats returns c's counts, without a lock.
func (c *PlanCache) Stats() PlanCacheStats {
	s := c.kept.Stats()
	return PlanCacheStats{Kept: s.Kept, Bound: int64(c.kept.Bound()), Hits: s.Hits, Misses: s.Misses}
}

// WithPlanCache keeps WithPlans' resolutions in c, which middlewares may
// share (see PlanCache). It needs WithPlans.
func WithPlanCache(c *PlanCache) Option {
	return func(cfg *config) { cfg.planCache, cfg.planCacheSet = c, true }
}
