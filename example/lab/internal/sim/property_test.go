package sim

import (
	"context"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Over random patterns and rates, no limiter admits more in a span of one
// window, for any key, than its bound: the fixed window at most twice the
// limit, the layered policy at most LayeredBound, the sliding log at most
// the limit and the token bucket at most twice the limit (a full bucket
// plus one window's refill).
func TestPropertyWorstSpanBounds(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cfg := Config{
			Limit:  rapid.Int64Range(1, 20).Draw(t, "limit"),
			Window: time.Duration(rapid.IntRange(1, 400).Draw(t, "window_5ms")) * 5 * time.Millisecond,
		}
		keys := []string{"a", "b", "c"}[:rapid.IntRange(1, 3).Draw(t, "keys")]
		// Uniform instants almost never find the worst case, so the
		// pattern is a few bursts, each near a boundary of the short (or
		// long) windows where bursts pay, plus some uniform noise. Half
		// the patterns sit on a millisecond grid, so that equal instants
		// and exact boundaries are hit too.
		w := int64(cfg.Window / LayeredParts)
		grid := rapid.Bool().Draw(t, "grid")
		p := &Pattern{Name: "random"}
		add := func(at int64, key string) {
			if grid {
				at -= at % int64(time.Millisecond)
			}
			p.Requests = append(p.Requests, Request{At: time.Duration(at), Key: key})
		}
		for range rapid.IntRange(1, 6).Draw(t, "bursts") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			start := rapid.Int64Range(1, 4*LayeredParts).Draw(t, "boundary")*w - rapid.Int64Range(0, w).Draw(t, "lead")
			width := rapid.Int64Range(0, 2*w).Draw(t, "width")
			n := rapid.Int64Range(1, 2*cfg.Limit+2).Draw(t, "n")
			for i := range n {
				add(start+width*i/n, key)
			}
		}
		// A train puts a small burst in each of several consecutive short
		// windows, at its start or its end: the shape that fills both
		// layers of the layered policy across a long boundary.
		perShort := (cfg.Limit + LayeredParts - 1) / LayeredParts
		for range rapid.IntRange(1, 2).Draw(t, "trains") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			first := rapid.Int64Range(0, 3*LayeredParts).Draw(t, "first")
			for k := first; k < first+LayeredParts+1; k++ {
				at := k * w
				if rapid.Bool().Draw(t, "late") {
					at += w - 1
				}
				for range max(0, perShort+rapid.Int64Range(-1, 1).Draw(t, "n")) {
					add(at, key)
				}
			}
		}
		for range rapid.IntRange(0, 20).Draw(t, "noise") {
			add(rapid.Int64Range(0, 4*int64(cfg.Window)).Draw(t, "at"), rapid.SampledFrom(keys).Draw(t, "key"))
		}
		sortRequests(p)

		long, short, err := LayeredRates(cfg)
		if err != nil {
			t.Fatal(err)
		}
		bounds := map[string]int64{
			FixedWindow: 2 * cfg.Limit,
			Layered:     LayeredBound(long, short),
			SlidingLog:  cfg.Limit,
			TokenBucket: 2*cfg.Limit - 1,
		}
		rs, err := Simulate(context.Background(), p, cfg, []string{FixedWindow, Layered, SlidingLog, TokenBucket})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if got := int64(r.WorstPerKey(p, cfg.Window)); got > bounds[r.Limiter] {
				t.Fatalf("%s, %d per %v: worst span of one key %d > bound %d", r.Limiter, cfg.Limit, cfg.Window, got, bounds[r.Limiter])
			}
		}
	})
}
