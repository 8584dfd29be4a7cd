// Package storetest runs tables of behaviour against any limiter.Store,
// so that every store is held to the same rows. A store's own tests call
// RunClockSteps with a factory for a fresh store and the rows that store
// must pass.
//
//	func TestClockSteps(t *testing.T) {
//		storetest.RunClockSteps(t, func(t *testing.T, clk limiter.Clock) limiter.Store {
//			return newStoreOn(t, clk)
//		}, rows)
//	}
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// Base is the instant every row starts from: 12:00:00.000 UTC, the start
// of a window of every length up to an hour. Phase offsets count from it.
var Base = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// DefaultPolicy is the policy of a row that names none: 2 per second, the
// rate of the faults issue's reproductions.
var DefaultPolicy = limiter.MustPolicy("steps", limiter.PerSecond(2))

// A NewStore returns a fresh, empty store and arranges for it to be closed
// when the test ends. clk is the row's fake clock, which the limiter reads
// and passes to the store with every request; the stores of this module
// keep no clock of their own and ignore it. Rows run in parallel and all use the key "k" under one
// policy, so a store on a shared server needs a key prefix of its own per
// call.
type NewStore func(t *testing.T, clk limiter.Clock) limiter.Store

// A ClockStep is one row: a policy and the phases a fake clock goes
// through, each with what the limiter must answer there.
type ClockStep struct {
	Name   string
	Policy *limiter.Policy // nil means DefaultPolicy
	Phases []Phase
}

// A Phase sets the clock to Base+At, runs Sweep or Do if set, then sends
// Send requests of cost 1 for Key and requires the first Admit of them to
// be admitted and the rest refused. With Times > 1 the phase repeats,
// Every later each time.
type Phase struct {
	At     time.Duration
	Every  time.Duration
	Times  int
	Key    string // "k" if empty
	Send   int
	Admit  int
	Sweep  bool         // call the store's Sweep(Base+At): it must have one
	Do     func(e *Env) // any other action at Base+At
	Reason string       // why this is the answer, shown on failure
}

// Env is what a phase's Do may act on.
type Env struct {
	T       *testing.T
	Clock   *limitertest.Clock
	Store   limiter.Store
	Limiter *limiter.Limiter
}

// A Sweeper frees the counters of windows that have passed at now, as
// MemoryStore.Sweep does.
type Sweeper interface{ Sweep(now time.Time) }

// RunClockSteps runs each row, in parallel, on a fresh store from
// newStore under a limiter that shares the row's fake clock.
func RunClockSteps(t *testing.T, newStore NewStore, rows []ClockStep) {
	t.Helper()
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			t.Parallel()
			clk := limitertest.New(Base)
			st := newStore(t, clk)
			p := row.Policy
			if p == nil {
				p = DefaultPolicy
			}
			l, err := limiter.New(p, limiter.WithStore(st), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			e := &Env{T: t, Clock: clk, Store: st, Limiter: l}
			for i, ph := range row.Phases {
				for j := range max(ph.Times, 1) {
					at := ph.At + time.Duration(j)*ph.Every
					runPhase(e, p, fmt.Sprintf("phase %d at %s", i, offset(at)), ph, at)
				}
			}
		})
	}
}

func runPhase(e *Env, p *limiter.Policy, where string, ph Phase, at time.Duration) {
	t := e.T
	t.Helper()
	now := Base.Add(at)
	e.Clock.Set(now)
	if ph.Reason != "" {
		where += " (" + ph.Reason + ")"
	}
	if ph.Sweep {
		s, ok := e.Store.(Sweeper)
		if !ok {
			t.Fatalf("%s: store %T has no Sweep", where, e.Store)
		}
		s.Sweep(now)
	}
	if ph.Do != nil {
		ph.Do(e)
	}
	key := ph.Key
	if key == "" {
		key = "k"
	}
	var longest time.Duration
	for i := range p.NumRates() {
		longest = max(longest, p.Rate(i).Window)
	}
	for k := range ph.Send {
		d, err := e.Limiter.Allow(context.Background(), key, 1)
		if err != nil {
			t.Fatalf("%s: request %d of %q: %v", where, k+1, key, err)
		}
		if want := k < ph.Admit; d.Allowed != want {
			t.Fatalf("%s: request %d of %d for %q: allowed %v, want %v (the first %d admitted); remaining %d, reset at %v",
				where, k+1, ph.Send, key, d.Allowed, want, ph.Admit, d.Remaining, d.ResetAt.Sub(Base))
		}
		// However the clock moved, a refusal never asks for a wait
		// longer than one window.
		if !d.Allowed && (d.RetryAfter <= 0 || d.RetryAfter > longest) {
			t.Fatalf("%s: refusal of %q asks to retry after %v, want within (0, %v]", where, key, d.RetryAfter, longest)
		}
	}
}

// offset names an instant as "Base+1h0m0.1s" or "Base-500ms".
func offset(d time.Duration) string {
	if d < 0 {
		return "Base-" + (-d).String()
	}
	return "Base+" + d.String()
}
