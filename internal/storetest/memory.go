package storetest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// RunMatchesMemory replays random traffic against the in-memory store and
// a store from newStore, on one fake clock, and wants identical answers:
// every decision (takes and peeks, layered windows, the largest limit),
// every settle and refund and the usage they leave, resets, and the slots
// of a cap. Each subtest builds its own store from newStore.
func RunMatchesMemory(t *testing.T, newStore NewStore) {
	t.Helper()
	t.Run("take", func(t *testing.T) { runTakes(t, newStore) })
	t.Run("settle_refund_reset", func(t *testing.T) { runSettles(t, newStore) })
	t.Run("cap", func(t *testing.T) { runCaps(t, newStore) })
}

// newMemory returns a memory store that sweeps nothing, closed when the
// test ends.
func newMemory(t *testing.T) *limiter.MemoryStore {
	t.Helper()
	mem, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mem.Close() })
	return mem
}

// runTakes sends 600 random requests per policy straight to both stores:
// both apply limiter.Decide.
func runTakes(t *testing.T, newStore NewStore) {
	policies := []struct {
		name string
		p    *limiter.Policy
	}{
		{"single_10_per_second", limiter.MustPolicy("one", limiter.PerSecond(10))},
		{"layered_minute_and_second", limiter.MustPolicy("two", limiter.PerMinute(30), limiter.PerSecond(5))},
		{"four_windows", limiter.MustPolicy("four", limiter.Rate{Limit: 3, Window: 250 * time.Millisecond},
			limiter.PerSecond(7), limiter.Rate{Limit: 20, Window: 10 * time.Second}, limiter.PerMinute(50))},
		// The largest limit (limiter.MaxLimit), on a window that brings
		// limit × window-ms within 0.1% of the 2^53 budget.
		{"big_limit_1ms_window", limiter.MustPolicy("big", limiter.Rate{Limit: limiter.MaxLimit, Window: 9 * time.Millisecond})},
	}
	for _, pc := range policies {
		t.Run(pc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := limitertest.New(Base.Add(123 * time.Millisecond))
			mem := newMemory(t)
			st := newStore(t, clk)
			rng := rand.New(rand.NewPCG(1, uint64(len(pc.name))))
			keys := []string{"a", "b{x}", "c}%"}
			for i := range 600 {
				clk.Advance(time.Duration(rng.IntN(40)) * time.Millisecond)
				req := limiter.Request{
					Key:    keys[rng.IntN(len(keys))],
					Policy: pc.p,
					Now:    clk.Now(),
					Cost:   1 + rng.Int64N(3),
					Peek:   rng.IntN(10) == 0,
				}
				if pc.name == "big_limit_1ms_window" {
					req.Cost = 1 << rng.IntN(53)
				}
				want, err := mem.Take(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				got, err := st.Take(ctx, req)
				if err != nil {
					t.Fatalf("step %d: Take: %v", i, err)
				}
				if !SameDecision(got, want) {
					t.Fatalf("step %d (%+v): got %+v, want %+v", i, req, got, want)
				}
			}
		})
	}
}

// An admission is a decision a limiter admitted at a cost, kept for a
// later settle or refund.
type admission struct {
	key  string
	cost int64
	mem  limiter.Decision
	got  limiter.Decision
}

// runSettles drives a limiter on each store with Allow, Settle (below,
// at and above the reservation), Refund and Reset of random keys, and
// compares every decision and, after each settle, refund and reset, the
// key's usage.
func runSettles(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	p := limiter.MustPolicy("settle", limiter.PerMinute(40), limiter.PerSecond(12))
	clk := limitertest.New(Base.Add(77 * time.Millisecond))
	lm := NewLimiter(t, p, newMemory(t), clk)
	ls := NewLimiter(t, p, newStore(t, clk), clk)
	rng := rand.New(rand.NewPCG(2, 7))
	keys := []string{"a", "b{x}", "c}%"}
	var pending []admission
	for i := range 800 {
		clk.Advance(time.Duration(rng.IntN(60)) * time.Millisecond)
		key := keys[rng.IntN(len(keys))]
		switch op := rng.IntN(10); {
		case op < 5 || len(pending) == 0:
			cost := 1 + rng.Int64N(4)
			want, err := lm.Allow(ctx, key, cost)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ls.Allow(ctx, key, cost)
			if err != nil {
				t.Fatalf("step %d: Allow(%q, %d): %v", i, key, cost, err)
			}
			if !SameDecision(got, want) {
				t.Fatalf("step %d: Allow(%q, %d): got %+v, want %+v", i, key, cost, got, want)
			}
			if got.Allowed {
				pending = append(pending, admission{key, cost, want, got})
			}
			continue
		case op < 8:
			j := rng.IntN(len(pending))
			a := pending[j]
			pending = append(pending[:j], pending[j+1:]...)
			key = a.key
			actual := rng.Int64N(2*a.cost + 3)
			if err := lm.Settle(ctx, a.key, a.cost, actual, a.mem); err != nil {
				t.Fatal(err)
			}
			if err := ls.Settle(ctx, a.key, a.cost, actual, a.got); err != nil {
				t.Fatalf("step %d: Settle(%q, %d, %d): %v", i, a.key, a.cost, actual, err)
			}
		case op < 9:
			j := rng.IntN(len(pending))
			a := pending[j]
			pending = append(pending[:j], pending[j+1:]...)
			key = a.key
			if err := lm.Refund(ctx, a.key, a.cost, a.mem); err != nil {
				t.Fatal(err)
			}
			if err := ls.Refund(ctx, a.key, a.cost, a.got); err != nil {
				t.Fatalf("step %d: Refund(%q, %d): %v", i, a.key, a.cost, err)
			}
		default:
			if err := lm.Reset(ctx, key); err != nil {
				t.Fatal(err)
			}
			if err := ls.Reset(ctx, key); err != nil {
				t.Fatalf("step %d: Reset(%q): %v", i, key, err)
			}
		}
		want, err := lm.Usage(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ls.Usage(ctx, key)
		if err != nil {
			t.Fatalf("step %d: Usage(%q): %v", i, key, err)
		}
		if !sameUsage(got, want) {
			t.Fatalf("step %d: Usage(%q): got %+v, want %+v", i, key, got, want)
		}
	}
}

// runCaps takes and gives back slots of a cap of 3 on each store, for
// random keys, and compares every answer and every key's slots held.
func runCaps(t *testing.T, newStore NewStore) {
	ctx := context.Background()
	clk := limitertest.New(Base)
	newCap := func(s limiter.Store) *limiter.InFlight {
		f, err := limiter.NewInFlight("cap", 3, limiter.WithStore(s), limiter.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	fm, fs := newCap(newMemory(t)), newCap(newStore(t, clk))
	rng := rand.New(rand.NewPCG(3, 5))
	keys := []string{"a", "b{x}", "c}%"}
	type held struct{ mem, got func() }
	slots := map[string][]held{}
	for i := range 400 {
		clk.Advance(time.Duration(rng.IntN(20)) * time.Millisecond)
		key := keys[rng.IntN(len(keys))]
		if rng.IntN(5) < 3 || len(slots[key]) == 0 {
			want, rm, err := fm.Acquire(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			got, rs, err := fs.Acquire(ctx, key)
			if err != nil {
				t.Fatalf("step %d: Acquire(%q): %v", i, key, err)
			}
			if got.Allowed != want.Allowed || got.Limit != want.Limit || got.Remaining != want.Remaining {
				t.Fatalf("step %d: Acquire(%q): got %+v, want %+v", i, key, got, want)
			}
			if got.Allowed {
				slots[key] = append(slots[key], held{rm, rs})
			}
		} else {
			j := rng.IntN(len(slots[key]))
			h := slots[key][j]
			slots[key] = append(slots[key][:j], slots[key][j+1:]...)
			h.mem()
			h.got()
		}
		want, err := fm.Usage(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fs.Usage(ctx, key)
		if err != nil {
			t.Fatalf("step %d: Usage(%q): %v", i, key, err)
		}
		if got.Held != want.Held || got.Held != int64(len(slots[key])) {
			t.Fatalf("step %d: %q holds %d slots, want %d (%d taken)", i, key, got.Held, want.Held, len(slots[key]))
		}
	}
}

// NewLimiter builds a limiter of p on s under clk, closed when the test
// ends.
func NewLimiter(t *testing.T, p *limiter.Policy, s limiter.Store, clk limiter.Clock) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// SameDecision reports whether a and b say the same: verdict, limit,
// remaining, reset, retry, window, and every window's status.
func SameDecision(a, b limiter.Decision) bool {
	if a.Allowed != b.Allowed || a.Limit != b.Limit || a.Remaining != b.Remaining ||
		!a.ResetAt.Equal(b.ResetAt) || a.RetryAfter != b.RetryAfter || a.Window != b.Window {
		return false
	}
	if a.NumWindows() != b.NumWindows() {
		return false
	}
	for i := range a.NumWindows() {
		if a.WindowAt(i) != b.WindowAt(i) {
			return false
		}
	}
	return true
}

// sameUsage reports whether a and b read the same windows at one instant.
func sameUsage(a, b limiter.Usage) bool {
	if !a.At.Equal(b.At) || len(a.Windows) != len(b.Windows) || a.Held != b.Held {
		return false
	}
	for i, w := range a.Windows {
		v := b.Windows[i]
		if w.Limit != v.Limit || w.Used != v.Used || w.Remaining != v.Remaining ||
			w.Window != v.Window || w.Name != v.Name || !w.ResetAt.Equal(v.ResetAt) {
			return false
		}
	}
	return true
}
