package sim

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A Result is what one limiter made of a pattern.
type Result struct {
	// Limiter is the limiter's name.
	Limiter string
	// Admitted holds one entry per request of the pattern, in order.
	Admitted []bool
	// Allowed and Rejected count the requests admitted and refused.
	Allowed, Rejected int
}

// Simulate replays p through each limiter named in names, enforcing cfg,
// and returns one Result per name in the same order. Every model is built
// before any runs, so that a bad name or config is reported before work
// is done.
func Simulate(ctx context.Context, p *Pattern, cfg Config, names []string) (_ []Result, err error) {
	if len(p.Requests) == 0 {
		return nil, ErrEmptyPattern
	}
	keys := p.Keys()
	models := make([]Model, 0, len(names))
	defer func() {
		for _, m := range models {
			err = errors.Join(err, m.Close())
		}
	}()
	for _, name := range names {
		m, err := New(name, cfg, keys)
		if err != nil {
			return nil, err
		}
		models = append(models, m)
	}
	results := make([]Result, len(names))
	for i, m := range models {
		r := Result{Limiter: names[i], Admitted: make([]bool, len(p.Requests))}
		for j, req := range p.Requests {
			ok, err := m.Allow(ctx, req.Key, req.At)
			if err != nil {
				return nil, fmt.Errorf("sim: %s at %v: %w", names[i], req.At, err)
			}
			r.Admitted[j] = ok
			if ok {
				r.Allowed++
			} else {
				r.Rejected++
			}
		}
		results[i] = r
	}
	return results, nil
}

// Worst returns the most requests of p admitted (per r) inside any
// half-open span [s, s+window), over all keys together: the most the
// backend received in one window's length, wherever the span starts.
func (r Result) Worst(p *Pattern, window time.Duration) int {
	ts := make([]time.Duration, 0, r.Allowed)
	for i, req := range p.Requests {
		if r.Admitted[i] {
			ts = append(ts, req.At)
		}
	}
	return WorstSpan(ts, window)
}

// WorstPerKey is Worst for the busiest single key: the figure a per-key
// limit bounds.
func (r Result) WorstPerKey(p *Pattern, window time.Duration) int {
	byKey := make(map[string][]time.Duration)
	for i, req := range p.Requests {
		if r.Admitted[i] {
			byKey[req.Key] = append(byKey[req.Key], req.At)
		}
	}
	worst := 0
	for _, ts := range byKey {
		worst = max(worst, WorstSpan(ts, window))
	}
	return worst
}

// WorstSpan returns the most instants of sorted inside any half-open span
// [s, s+window).
func WorstSpan(sorted []time.Duration, window time.Duration) int {
	n, _ := WorstSpanStart(sorted, window)
	return n
}

// WorstSpanStart is WorstSpan that also returns where the first such span
// starts (0 when sorted is empty). The best span always starts at one of
// the instants, so two cursors find it in linear time.
func WorstSpanStart(sorted []time.Duration, window time.Duration) (n int, start time.Duration) {
	end := 0
	for i := range sorted {
		for end < len(sorted) && sorted[end]-sorted[i] < window {
			end++
		}
		if end-i > n {
			n, start = end-i, sorted[i]
		}
	}
	return n, start
}
