package limiter_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// memoryClockSteps are the clock faults of SECURITY.md's table against
// the memory store, 2 per second unless a row says otherwise. Each row holds the
// bound: after a step of any size, forward or back, a key is refused for
// at most one window it should not be and given at most one window's extra
// budget, and from the window after that it is admitted exactly its limit
// in every window.
var memoryClockSteps = []storetest.ClockStep{
	{Name: "forward_1h_then_corrected", Phases: []storetest.Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Hour + 100*time.Millisecond, Send: 3, Admit: 2, Reason: "the glitched hour is a fresh window"},
		{At: 200 * time.Millisecond, Send: 3, Admit: 2, Reason: "the window the glitch left is far ahead: stale, dropped, the current window starts again"},
		{At: 1200 * time.Millisecond, Every: time.Second, Times: 10, Send: 3, Admit: 2, Reason: "the full limit in every window after"},
	}},
	{Name: "forward_1h_then_corrected_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Hour + 100*time.Millisecond, Send: 3, Admit: 2},
		{At: 200 * time.Millisecond, Send: 3, Admit: 2, Reason: "both glitched windows dropped; 2 of the minute's 5 spent again"},
		{At: 1200 * time.Millisecond, Send: 3, Admit: 2, Reason: "4 of the minute's 5"},
		{At: 2200 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: time.Minute + 200*time.Millisecond, Send: 3, Admit: 2, Reason: "a fresh minute"},
	}},
	{Name: "forward_1_window_then_corrected", Phases: []storetest.Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: 1100 * time.Millisecond, Send: 3, Admit: 2, Reason: "the next window, fresh"},
		{At: 200 * time.Millisecond, Send: 3, Admit: 0, Reason: "one window back: decided in the window already spent, as a racing read would be"},
		{At: 1200 * time.Millisecond, Send: 3, Admit: 0},
		{At: 2200 * time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2, Reason: "over the two windows, exactly two windows' budget"},
	}},
	{Name: "back_1s", Phases: []storetest.Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: -500 * time.Millisecond, Send: 3, Admit: 0, Reason: "one window back is decided in the window already spent: no rewind"},
		{At: 100 * time.Millisecond, Send: 3, Admit: 0, Reason: "the clock replays the spent window"},
		{At: 1100 * time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2},
	}},
	{Name: "back_10s", Phases: []storetest.Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: -9500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the stored window is ten ahead: stale, the current window starts"},
		{At: -8500 * time.Millisecond, Every: time.Second, Times: 12, Send: 3, Admit: 2, Reason: "the full limit in every window, through the replayed ones"},
	}},
	{Name: "back_10s_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 40500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 30500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the second's table is ten ahead: dropped; the minute's is current"},
		{At: 31500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: time.Minute + 500*time.Millisecond, Send: 3, Admit: 2},
	}},
	{Name: "back_6s_across_a_minute_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 65500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 59500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the minute's table is one ahead: decided at 12:01:00, whose second is fresh; the second's table, six ahead, is dropped"},
		{At: 60500 * time.Millisecond, Send: 3, Admit: 0, Reason: "the second 12:01:00 was spent at 12:00:59.5"},
		{At: 61500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: 2*time.Minute + 500*time.Millisecond, Send: 3, Admit: 2},
	}},
	{Name: "back_30s_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(100)), Phases: []storetest.Phase{
		{At: 70500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 40500 * time.Millisecond, Every: time.Second, Times: 35, Send: 3, Admit: 2, Reason: "the minute's table is 19.5s ahead, more than the shortest window: stale like the second's, so each second is decided at its own instant, through the replayed minute and on"},
	}},
	{Name: "back_30s_layered_minute_spent", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 70500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 40500 * time.Millisecond, Send: 3, Admit: 2, Reason: "both tables stale: the current second and minute start afresh, the minute's 2 lost (its one window of extra budget)"},
		{At: 41500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 42500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: 43500 * time.Millisecond, Send: 3, Admit: 0},
		{At: 60500 * time.Millisecond, Every: time.Second, Times: 2, Send: 3, Admit: 2, Reason: "the minute 12:01 starts afresh when the clock reaches it"},
		{At: 62500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
	}},
	{Name: "back_one_short_window_across_a_minute_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 60200 * time.Millisecond, Send: 3, Admit: 2},
		{At: 59 * time.Second, Send: 3, Admit: 0, Reason: "the minute's table is exactly the shortest window ahead: a racing read, decided at 12:01:00, whose second is spent"},
		{At: 61 * time.Second, Send: 3, Admit: 2},
		{At: 62 * time.Second, Send: 3, Admit: 1, Reason: "the minute is spent"},
	}},
	{Name: "back_one_short_window_plus_1ms_across_a_minute_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []storetest.Phase{
		{At: 60200 * time.Millisecond, Send: 3, Admit: 2},
		{At: 58999 * time.Millisecond, Send: 3, Admit: 2, Reason: "the minute's table is further ahead than the shortest window: stale, the minute 12:00 and its second start afresh"},
		{At: 59500 * time.Millisecond, Send: 3, Admit: 2, Reason: "4 of the minute 12:00's 5"},
		{At: 60500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the minute 12:01 starts afresh"},
	}},
	{Name: "back_window_plus_1ms_from_window_start", Phases: []storetest.Phase{
		{At: 0, Send: 3, Admit: 2},
		{At: -1001 * time.Millisecond, Send: 3, Admit: 2, Reason: "two windows back: the stored window is stale"},
		{At: -1 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Millisecond, Every: time.Second, Times: 3, Send: 3, Admit: 2},
	}},
	{Name: "back_window_plus_1ms_from_window_end", Phases: []storetest.Phase{
		{At: 999 * time.Millisecond, Send: 3, Admit: 2},
		{At: -2 * time.Millisecond, Send: 3, Admit: 0, Reason: "one window back: decided in the window already spent"},
		{At: 500 * time.Millisecond, Send: 3, Admit: 0, Reason: "the clock replays the spent window"},
		{At: time.Second, Every: time.Second, Times: 3, Send: 3, Admit: 2},
	}},
	{Name: "forward_a_day", Phases: []storetest.Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 24*time.Hour + 500*time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2},
	}},
	{Name: "sweep_on_glitched_clock", Phases: []storetest.Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Hour, Sweep: true},
		{At: 200 * time.Millisecond, Send: 3, Admit: 2, Reason: "the sweep freed the current window's counts: one window's counts lost"},
		{At: 1200 * time.Millisecond, Every: time.Second, Times: 60, Key: "fresh", Send: 1, Admit: 1, Reason: "1 per second under 2 per second is always admitted"},
		{At: time.Minute + 200*time.Millisecond, Send: 3, Admit: 2},
	}},
}

// newMemoryStepStore makes stores with no background sweep (a phase may
// run its pass with limiter.SweepAt) whose monotonic clock stands at 0:
// a table's sweep deadline is the time its placing request left of its
// window.
func newMemoryStepStore(shards int) storetest.NewStore {
	return func(t *testing.T, _ limiter.Clock) limiter.Store {
		t.Helper()
		st, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0), limiter.WithShards(shards),
			limiter.WithMono(func() time.Duration { return 0 }))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
}

func TestMemoryStoreClockSteps(t *testing.T) {
	t.Parallel()
	storetest.RunClockSteps(t, newMemoryStepStore(4), memoryClockSteps)
}

// TestMemoryStoreBackgroundSweepOnGlitchedClock: the background sweep
// reads no clock. It frees a table once the monotonic clock passes the
// deadline the request that placed the table gave it (the time that
// request's instant left of its window), and moves no table. So a request
// that reads a glitched clock misleads the sweep about the table it moved
// and no other, and the deadline it gives frees that table's counts at
// most one window early. The store has two shards, a test-driven
// monotonic clock and no ticker: each step runs the sweep's pass at the
// monotonic time of the step. At true time T (from Base) the monotonic
// clock reads T-100ms.
//
// "glitch_on_another_shard" puts the glitched request on the other shard
// from "k": only the sweep could then touch k's counts (on one shard, the
// glitched request itself would drop them, hiding the sweep), and a sweep
// that moved tables or freed windows by a glitched instant would free
// them early. "glitch_into_the_next_window" moves k's own table a window
// ahead, and the sweep frees it at the deadline the glitch gave, 900ms
// before that window ends: early, by less than one window.
func TestMemoryStoreBackgroundSweepOnGlitchedClock(t *testing.T) {
	t.Parallel()
	type step struct {
		at    time.Duration // true time, from Base
		reads time.Duration // what the clock reads, if not at
		sweep bool          // run the sweep's pass first
		key   string        // "k", or "g": a key on the other shard
		send  int
		admit int
		held  int // counters held after the step; -1: not checked
		why   string
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"glitch_on_another_shard", []step{
			{at: 100 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1},
			{at: 150 * time.Millisecond, reads: time.Hour, key: "g", send: 1, admit: 1, held: 2, why: "one request reads the clock an hour ahead"},
			{at: 200 * time.Millisecond, sweep: true, key: "k", send: 3, admit: 0, held: 2, why: "the sweep after the glitch frees and moves nothing: k's window is spent"},
			{at: 999 * time.Millisecond, sweep: true, key: "k", send: 3, admit: 0, held: 2, why: "k's window has 1ms left"},
			{at: time.Second, sweep: true, held: 1, why: "k's window has ended: freed; the glitched one has 150ms left of the second its request left it"},
			{at: 1149 * time.Millisecond, sweep: true, held: 1},
			{at: 1150 * time.Millisecond, sweep: true, held: 0, why: "the glitched window's second has passed"},
			{at: 1200 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1},
		}},
		{"glitch_into_the_next_window", []step{
			{at: 100 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1},
			{at: 150 * time.Millisecond, reads: 1050 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1, why: "the glitched read moves the table a window ahead: the current window's counts are lost"},
			{at: 200 * time.Millisecond, sweep: true, key: "k", send: 3, admit: 0, held: 1, why: "the corrected clock is one window behind the table: decided in it, spent"},
			{at: 1099 * time.Millisecond, sweep: true, key: "k", send: 3, admit: 0, held: 1, why: "the table's deadline, from the glitched read, is 950ms after it"},
			{at: 1100 * time.Millisecond, sweep: true, held: 0, why: "freed 900ms before its window ends: less than one window early"},
			{at: 1200 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1, why: "the window's second budget: one window's extra"},
			{at: 2200 * time.Millisecond, key: "k", send: 3, admit: 2, held: 1},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mono atomic.Int64
			st, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0), limiter.WithShards(2),
				limiter.WithMono(func() time.Duration { return time.Duration(mono.Load()) }))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			p := storetest.DefaultPolicy
			clk := limitertest.New(storetest.Base)
			l, err := limiter.New(p, limiter.WithStore(st), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			keys := map[string]string{"k": "k"}
			for i := 0; keys["g"] == ""; i++ {
				if g := "g" + strconv.Itoa(i); limiter.ShardOf(st, g, p) != limiter.ShardOf(st, "k", p) {
					keys["g"] = g
				}
			}
			for _, s := range tc.steps {
				mono.Store(int64(s.at - 100*time.Millisecond))
				reads := s.at
				if s.reads != 0 {
					reads = s.reads
				}
				clk.Set(storetest.Base.Add(reads))
				where := fmt.Sprintf("at Base+%v, the clock reading Base+%v", s.at, reads)
				if s.why != "" {
					where += " (" + s.why + ")"
				}
				if s.sweep {
					limiter.SweepAt(st, time.Duration(mono.Load()))
				}
				admitted := 0
				for range s.send {
					d, err := l.Allow(context.Background(), keys[s.key], 1)
					if err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if d.Allowed {
						admitted++
					}
				}
				if admitted != s.admit {
					t.Fatalf("%s: %q admitted %d of %d, want %d", where, s.key, admitted, s.send, s.admit)
				}
				if s.held >= 0 && st.Stats().Keys != s.held {
					t.Fatalf("%s: %d counters held, want %d", where, st.Stats().Keys, s.held)
				}
			}
		})
	}
}
