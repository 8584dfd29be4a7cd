package storetest

import (
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// KeyedClockSteps are the memory store's clock-step rows
// (limiter/clockstep_test.go) as the Redis store must answer them under
// the application's clock, on Redis and on miniredis, 2 per second unless
// a row says otherwise. The sweep row is left out:
// Redis has no sweep, its keys expire. Where the answer differs from the
// memory store's, the reason says why: under appClock the window id is in
// the key, so each window keeps its own count for as long as its key
// lives, where the memory store keeps one table per window length and a
// step overwrites or drops it. The bound is the same: after a step of any
// size a key is given at most one window's extra budget, and from the
// window after that it is admitted exactly its limit in every window.
var KeyedClockSteps = []ClockStep{
	{Name: "forward_1h_then_corrected", Phases: []Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Hour + 100*time.Millisecond, Send: 3, Admit: 2, Reason: "the glitched hour is a fresh window"},
		{At: 200 * time.Millisecond, Send: 3, Admit: 0, Reason: "the current window's key still holds its count (the memory store's table was overwritten: it admits 2)"},
		{At: 1200 * time.Millisecond, Every: time.Second, Times: 10, Send: 3, Admit: 2, Reason: "the full limit in every window after"},
	}},
	{Name: "forward_1h_then_corrected_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Hour + 100*time.Millisecond, Send: 3, Admit: 2},
		{At: 200 * time.Millisecond, Send: 3, Admit: 0, Reason: "the second's key still holds its 2"},
		{At: 1200 * time.Millisecond, Send: 3, Admit: 2, Reason: "4 of the minute's 5"},
		{At: 2200 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: time.Minute + 200*time.Millisecond, Send: 3, Admit: 2, Reason: "a fresh minute"},
	}},
	{Name: "forward_1_window_then_corrected", Phases: []Phase{
		{At: 100 * time.Millisecond, Send: 3, Admit: 2},
		{At: 1100 * time.Millisecond, Send: 3, Admit: 2, Reason: "the next window, fresh"},
		{At: 200 * time.Millisecond, Send: 3, Admit: 0, Reason: "back in the window already spent"},
		{At: 1200 * time.Millisecond, Send: 3, Admit: 0},
		{At: 2200 * time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2, Reason: "over the two windows, exactly two windows' budget"},
	}},
	{Name: "back_1s", Phases: []Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: -500 * time.Millisecond, Send: 3, Admit: 2, Reason: "one window back is a key of its own, fresh: the one window's extra budget (the memory store decides it in the spent window: 0)"},
		{At: 100 * time.Millisecond, Send: 3, Admit: 0, Reason: "the clock replays the spent window"},
		{At: 1100 * time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2},
	}},
	{Name: "back_10s", Phases: []Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: -9500 * time.Millisecond, Send: 3, Admit: 2, Reason: "a window never seen: fresh"},
		{At: -8500 * time.Millisecond, Every: time.Second, Times: 9, Send: 3, Admit: 2, Reason: "the full limit in every replayed window"},
		{At: 500 * time.Millisecond, Send: 3, Admit: 0, Reason: "the window spent before the step keeps its count (the memory store dropped it: 2)"},
		{At: 1500 * time.Millisecond, Every: time.Second, Times: 2, Send: 3, Admit: 2},
	}},
	{Name: "back_10s_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []Phase{
		{At: 40500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 30500 * time.Millisecond, Send: 3, Admit: 2, Reason: "a fresh second; the minute's key is current"},
		{At: 31500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: time.Minute + 500*time.Millisecond, Send: 3, Admit: 2},
	}},
	{Name: "back_6s_across_a_minute_layered", Policy: limiter.MustPolicy("steps", limiter.PerSecond(2), limiter.PerMinute(5)), Phases: []Phase{
		{At: 65500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 59500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the minute before is a key of its own, fresh"},
		{At: 60500 * time.Millisecond, Send: 3, Admit: 2, Reason: "the second 12:01:00 is fresh and the minute holds 2 of 5 (the memory store decided 12:00:59.5 in 12:01:00: 0)"},
		{At: 61500 * time.Millisecond, Send: 3, Admit: 1, Reason: "the minute is spent"},
		{At: 2*time.Minute + 500*time.Millisecond, Send: 3, Admit: 2},
	}},
	{Name: "back_window_plus_1ms_from_window_start", Phases: []Phase{
		{At: 0, Send: 3, Admit: 2},
		{At: -1001 * time.Millisecond, Send: 3, Admit: 2, Reason: "two windows back: a fresh key"},
		{At: -1 * time.Millisecond, Send: 3, Admit: 2},
		{At: time.Millisecond, Send: 3, Admit: 0, Reason: "the window spent before the step keeps its count (the memory store dropped it: 2)"},
		{At: 1001 * time.Millisecond, Every: time.Second, Times: 2, Send: 3, Admit: 2},
	}},
	{Name: "back_window_plus_1ms_from_window_end", Phases: []Phase{
		{At: 999 * time.Millisecond, Send: 3, Admit: 2},
		{At: -2 * time.Millisecond, Send: 3, Admit: 2, Reason: "one window back is a key of its own, fresh (the memory store: 0)"},
		{At: 500 * time.Millisecond, Send: 3, Admit: 0, Reason: "the clock replays the spent window"},
		{At: time.Second, Every: time.Second, Times: 3, Send: 3, Admit: 2},
	}},
	{Name: "forward_a_day", Phases: []Phase{
		{At: 500 * time.Millisecond, Send: 3, Admit: 2},
		{At: 24*time.Hour + 500*time.Millisecond, Every: time.Second, Times: 5, Send: 3, Admit: 2},
	}},
}
