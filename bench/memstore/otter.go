// Package memstore holds the contender we measured against the module's
// own in-memory store: a limiter.Store on otter/v2, a bounded cache with
// an atomic Compute. It lives in the nested bench module so that otter
// never enters the root module's go.mod.
package memstore

import (
	"context"
	"time"

	"github.com/fixedwindow/ratelimit/internal/window"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/maypok86/otter/v2"
)

type otterKey struct {
	policy string
	key    string
}

// OtterStore is a limiter.Store on an otter cache: one entry per (policy,
// key) holding every window's state, updated inside Compute, which locks
// the entry's bucket for the read-decide-write. Entries expire twice the
// policy's longest window after creation; the bound evicts by W-TinyLFU.
type OtterStore struct {
	cache *otter.Cache[otterKey, [limiter.MaxWindows]limiter.State]
}

// NewOtterStore returns a store bounded to maxKeys entries, whose
// entries expire ttl after creation.
func NewOtterStore(maxKeys int, ttl time.Duration) (*OtterStore, error) {
	c, err := otter.New(&otter.Options[otterKey, [limiter.MaxWindows]limiter.State]{
		MaximumSize:      maxKeys,
		ExpiryCalculator: otter.ExpiryCreating[otterKey, [limiter.MaxWindows]limiter.State](ttl),
	})
	if err != nil {
		return nil, err
	}
	return &OtterStore{cache: c}, nil
}

// Take decides inside Compute, so no update is lost.
func (s *OtterStore) Take(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	var d limiter.Decision
	s.cache.Compute(otterKey{req.Policy.ID(), req.Key}, func(old [limiter.MaxWindows]limiter.State, found bool) ([limiter.MaxWindows]limiter.State, otter.ComputeOp) {
		var next [limiter.MaxWindows]limiter.State
		next, d = limiter.Decide(req.Policy, old, req.Now, req.Cost)
		if !d.Allowed || req.Peek {
			return old, otter.CancelOp
		}
		return next, otter.WriteOp
	})
	return d, nil
}

// Reset forgets key under p, in whatever window.
func (s *OtterStore) Reset(ctx context.Context, key string, p *limiter.Policy, _ time.Time) error {
	s.cache.Invalidate(otterKey{p.ID(), key})
	return nil
}

// Refund returns req.Cost to the windows d charged that are still current
// at req.Now, never below zero, inside Compute as Take decides.
func (s *OtterStore) Refund(ctx context.Context, req limiter.Request, d limiter.Decision) error {
	if ok, err := limiter.Refundable(d, req.Policy); !ok {
		return err
	}
	s.cache.Compute(otterKey{req.Policy.ID(), req.Key}, func(old [limiter.MaxWindows]limiter.State, found bool) ([limiter.MaxWindows]limiter.State, otter.ComputeOp) {
		if !found {
			return old, otter.CancelOp
		}
		for i := range req.Policy.NumRates() {
			ms := req.Policy.Rate(i).Window.Milliseconds()
			charged, _, _ := window.ID(d.DecidedAt().UnixMilli(), ms)
			now, _, _ := window.ID(req.Now.UnixMilli(), ms)
			if old[i].Window == charged && now == charged {
				old[i].Count = max(0, old[i].Count-req.Cost)
			}
		}
		return old, otter.WriteOp
	})
	return nil
}

// Len returns the cache's estimated size.
func (s *OtterStore) Len() int { return s.cache.EstimatedSize() }

// Close stops the cache's maintenance.
func (s *OtterStore) Close() { s.cache.StopAllGoroutines() }

var _ limiter.Store = (*OtterStore)(nil)
