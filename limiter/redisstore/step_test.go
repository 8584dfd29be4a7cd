package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestServerClockSteppedBack: Redis's clock stepped back (an NTP step, a
// failover to a node whose clock lags) leaves a stored window id ahead of
// TIME. One window ahead, the request is decided in that window, as a
// racing clock would have it; further ahead the state is stale and the
// current window starts afresh, with its own expiry. A step back never
// locks a key out for longer than one window. Redis's clock cannot be
// stepped from here, so each row writes the hash a faster clock would
// have left: the key of the minute full in window TIME's id + ahead.
//
// The layered row holds the bound to the policy's shortest window, not
// the stored window's own: a minute stored one ahead while TIME is more
// than a second before its start is what a step back of more than a
// second leaves (the second's window would be as far ahead), so it is
// stale, and the minute TIME is in starts afresh.
func TestServerClockSteppedBack(t *testing.T) {
	const limit = 5
	c := sharedClient(t)
	ctx := context.Background()
	minute := limiter.MustPolicy("step", limiter.PerMinute(limit))
	layered := limiter.MustPolicy("step", limiter.PerSecond(100), limiter.PerMinute(limit))
	wms := time.Minute.Milliseconds()
	margin := 2 * time.Second
	for _, tc := range []struct {
		name    string
		p       *limiter.Policy
		ahead   int64 // stored window id minus TIME's
		stored  int64 // count in the stored window
		allowed bool
		wantW   int64 // window id stored after, relative to TIME's
		wantC   int64 // count stored after
	}{
		{"back_1s_full_decides_in_stored_window", minute, 1, limit, false, 1, limit},
		{"back_1s_room_charges_stored_window", minute, 1, 2, true, 1, 3},
		{"back_one_window_plus_1ms_stale", minute, 2, limit, true, 0, 1},
		{"back_10_windows_stale", minute, 10, limit, true, 0, 1},
		{"back_a_day_stale", minute, 24 * 60, limit, true, 0, 1},
		{"back_over_1s_layered_minute_one_ahead_stale", layered, 1, limit, true, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.p
			i := p.NumRates() - 1 // the minute
			awaitServerWindow(t, c, time.Minute)
			s := newStore(t, c, withClockSource(serverClock), WithExpiryMargin(margin), WithOverLimitCache(0))
			l := newLimiter(t, p, s, limitertest.New(t0))
			key := keyOf(s, "k", p, i, t0)
			tm := serverTime(t, c)
			if next := nextServerWindow(tm, time.Minute); p.NumRates() > 1 && next.Sub(tm) < 2*time.Second {
				// Within a second of the next minute, a minute stored
				// one ahead is a racing read: wait for that minute, on
				// Redis's clock, which the test cannot move.
				tm = awaitServerTime(t, c, next.Add(10*time.Millisecond))
			}
			id := tm.UnixMilli() / wms
			// The faster clock's key expires with its own window.
			ttl := time.Duration((id+tc.ahead+1)*wms-tm.UnixMilli())*time.Millisecond + margin
			if err := c.Set(ctx, key, serverValue(id+tc.ahead, tc.stored), 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.PExpire(ctx, key, ttl).Err(); err != nil {
				t.Fatal(err)
			}
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || d.Allowed != tc.allowed {
				t.Fatalf("stored window TIME+%d holding %d: got %+v, %v; want allowed=%v",
					tc.ahead, tc.stored, d, err, tc.allowed)
			}
			if limitEnd := time.UnixMilli((id + 2) * wms); d.ResetAt.After(limitEnd) {
				t.Fatalf("reset at %v, after the end of the window after TIME's (%v)", d.ResetAt, limitEnd)
			}
			gotW, gotC, err := serverWindow(ctx, c, key)
			if err != nil {
				t.Fatal(err)
			}
			wantW, wantC := strconv.FormatInt(id+tc.wantW, 10), strconv.FormatInt(tc.wantC, 10)
			if gotW != wantW || gotC != wantC {
				t.Fatalf("stored %s:%s, want %s:%s", gotW, gotC, wantW, wantC)
			}
			pttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if bound := time.Duration((id+tc.wantW+1)*wms-tm.UnixMilli())*time.Millisecond + margin; pttl <= 0 || pttl > bound {
				t.Fatalf("expiry in %v, want within (0, %v]: the end of the window decided in plus the margin", pttl, bound)
			}
			// What is left of the window decided in is spent exactly.
			if got := admitted(t, l, "k", limit+2, nil); got != int(limit-tc.wantC) {
				t.Fatalf("then: admitted %d of %d, want %d", got, limit+2, limit-tc.wantC)
			}
		})
	}
}

// TestAppClockStepBounded: under appClock the window id is in the key
// name and expiry is relative (the window's remainder plus the margin,
// on Redis's clock), so a stepped application clock touches other keys
// and whatever it writes there dies within one window and the margin:
// a step forward and back, or back alone, costs at most one window of
// wrong answers, and the correction is admitted at once.
func TestAppClockStepBounded(t *testing.T) {
	const limit = 2
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("step", limiter.PerMinute(limit))
	margin := 2 * time.Second
	type step struct {
		at   time.Duration // from t0; window W is [t0, t0+1m)
		want int           // admitted of limit+1 calls there
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		// The glitched window gets a budget of its own (the one window
		// of wrong answers); back in W the count is W's own, and the next
		// window starts clean.
		{"forward_1h_then_corrected", []step{{time.Hour, limit}, {31 * time.Second, 0}, {90 * time.Second, limit}}},
		{"forward_a_day_then_corrected", []step{{24 * time.Hour, limit}, {31 * time.Second, 0}, {90 * time.Second, limit}}},
		{"back_1s_same_window", []step{{29 * time.Second, 0}, {90 * time.Second, limit}}},
		{"back_10s_same_window", []step{{20 * time.Second, 0}, {90 * time.Second, limit}}},
		{"back_one_window_plus_1ms", []step{{-30*time.Second - time.Millisecond, limit}, {31 * time.Second, 0}, {90 * time.Second, limit}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, c, WithExpiryMargin(margin), WithOverLimitCache(0))
			clk := limitertest.New(t0.Add(30 * time.Second))
			l := newLimiter(t, p, s, clk)
			if got := admitted(t, l, "k", limit+1, nil); got != limit {
				t.Fatalf("before the step: admitted %d, want %d", got, limit)
			}
			for _, st := range tc.steps {
				clk.Set(t0.Add(st.at))
				if got := admitted(t, l, "k", limit+1, nil); got != st.want {
					t.Fatalf("at t0%+v: admitted %d of %d, want %d", st.at, got, limit+1, st.want)
				}
				key := keyOf(s, "k", p, 0, clk.Now())
				pttl, err := c.PTTL(ctx, key).Result()
				if err != nil {
					t.Fatal(err)
				}
				if bound := time.Minute + margin; pttl <= 0 || pttl > bound {
					t.Fatalf("key of the stepped window expires in %v, want within (0, %v]", pttl, bound)
				}
			}
		})
	}
}
