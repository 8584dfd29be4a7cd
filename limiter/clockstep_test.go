package limiter_test

import (
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// memoryClockSteps are the clock faults of issue 9 against the memory
// store, 2 per second unless a row says otherwise. Each row holds the
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

// TestMemoryStoreBackgroundSweepOnGlitchedClock: a request reads the clock
// an hour ahead and the background sweep runs after it, by the instant
// that request gave it. Afterwards a fresh key at 1 per second under 2 per
// second is admitted every time, and the key whose counts the glitch cost
// gets at most one window's extra budget. One shard, so that the glitch
// moves the table that "k" is counted in.
func TestMemoryStoreBackgroundSweepOnGlitchedClock(t *testing.T) {
	t.Parallel()
	storetest.RunClockSteps(t, newMemoryStepStore(1), []storetest.ClockStep{
		{Name: "forward_1h_swept_then_corrected", Phases: []storetest.Phase{
			{At: 100 * time.Millisecond, Send: 3, Admit: 2},
			{At: time.Hour, Key: "glitch", Send: 1, Admit: 1, Reason: "one request reads the clock an hour ahead"},
			{At: time.Hour, Do: waitSwept},
			{At: 200 * time.Millisecond, Send: 3, Admit: 2, Reason: "the glitch freed the current window's counts"},
			{At: 1200 * time.Millisecond, Every: time.Second, Times: 60, Key: "fresh", Send: 1, Admit: 1},
			{At: time.Minute + 200*time.Millisecond, Send: 3, Admit: 2},
		}},
	})
}

// waitSwept runs the background sweep's pass a second after the last
// request, on the store's monotonic clock: the glitched request left its
// window a second, so every counter is freed.
func waitSwept(e *storetest.Env) {
	st := e.Store.(*limiter.MemoryStore)
	limiter.SweepAt(st, time.Second)
	if n := st.Len(); n != 0 {
		e.T.Fatalf("the background sweep never freed the window of %v: %d counters held", e.Clock.Now(), n)
	}
}
