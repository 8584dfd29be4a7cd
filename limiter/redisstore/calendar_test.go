package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestCalendarAppClock crosses a spring-forward day, an autumn day,
// February of a leap year, a Monday in zones 45 minutes off the hour, a
// day with no midnight and a month over a minute on Redis with the
// limiter's clock, as the memory store does: with the over-limit cache,
// without it, with leases (each step's requests are a hot key), and on
// the Plain path.
func TestCalendarAppClock(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster bool
		opts    []Option
	}{
		{"batch", false, nil},
		{"no_overlimit_cache", false, []Option{WithOverLimitCache(0)}},
		{"leases", false, []Option{WithLeases(time.Second, 1)}},
		{"plain", false, []Option{withPath(pathPlain)}},
		{"cluster", true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			storetest.RunCalendar(t, func(t *testing.T, _ limiter.Clock) limiter.Store {
				return newStore(t, calendarClient(t, tc.cluster), tc.opts...)
			}, storetest.CalendarRows(t, ""))
		})
	}
}

// calendarClient returns a client of the shared Redis, or of the shared
// three-master Cluster.
func calendarClient(t *testing.T, cluster bool) redis.UniversalClient {
	t.Helper()
	if cluster {
		return redistest.SharedCluster(t).Client(t)
	}
	return redistest.Client(t, redistest.SharedAddr)
}

// zoneWithMidnightAt returns a fixed zone whose local midnight falls at
// mid, a whole second: Redis's clock cannot be moved, so the test moves
// the zone's midnight to it instead.
func zoneWithMidnightAt(mid time.Time) *time.Location {
	off := (86400 - mid.Unix()%86400) % 86400
	return time.FixedZone("Test+"+strconv.FormatInt(off, 10), int(off))
}

// TestCalendarServerClockAcrossMidnight: two replicas (two clients, two
// stores) decide a day by Redis's clock, whose midnight, in a zone built
// for the test, comes three seconds after the test starts. Their own
// clocks are 20 hours behind and 20 hours ahead of Redis's: each sends the
// windows around its own clock, the script decides in the one that holds
// TIME, and the two share one budget exactly, before midnight and after.
func TestCalendarServerClockAcrossMidnight(t *testing.T) {
	const limit, calls = 20, 60
	c := sharedClient(t)
	for _, tc := range []struct {
		name    string
		cluster bool
		opts    []Option
		// stranded bounds the units a replica may hold leased and never
		// spend by the window's end: R × limit/divisor (see WithLeases).
		stranded int64
	}{
		{"batch", false, nil, 0},
		{"leases", false, []Option{WithLeases(time.Second, 4)}, 2 * limit / 4},
		{"cluster", true, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := testPrefix(t)
			var stores [2]*Store
			for i := range stores {
				stores[i] = newStore(t, calendarClient(t, tc.cluster), append([]Option{WithPrefix(prefix), withClockSource(serverClock)}, tc.opts...)...)
			}
			// Midnight three seconds from now, once the stores are up.
			mid := serverTime(t, c).Add(3 * time.Second).Truncate(time.Second)
			p := limiter.MustPolicy("day-"+tc.name, limiter.PerDayIn(limit, zoneWithMidnightAt(mid)), limiter.PerHour(10*limit))
			behind, ahead := limitertest.New(time.Time{}), limitertest.New(time.Time{})
			sync := func() {
				now := serverTime(t, c)
				behind.Set(now.Add(-20 * time.Hour))
				ahead.Set(now.Add(20 * time.Hour))
			}
			sync()
			ls := [2]*limiter.Limiter{newLimiter(t, p, stores[0], behind), newLimiter(t, p, stores[1], ahead)}
			if got := fire(t, ls[:], "k", calls); got > limit || got < limit-tc.stranded {
				t.Fatalf("before midnight: admitted %d of %d, want %d (less at most %d leased and not spent)", got, calls, limit, tc.stranded)
			}
			// A charge of the day before midnight, to refund after it.
			charged, err := ls[0].Allow(context.Background(), "other", 1)
			if err != nil || !charged.Allowed {
				t.Fatalf("a charge before midnight: %+v, %v", charged, err)
			}
			if now := serverTime(t, c); !now.Before(mid) {
				t.Fatalf("the calls before midnight ended at %v, after it (%v): the machine is too slow for this test's margin", now, mid)
			}
			awaitServerTime(t, c, mid.Add(10*time.Millisecond))
			sync()
			if got := fire(t, ls[:], "k", calls); got > limit || got < limit-tc.stranded {
				t.Fatalf("after midnight: admitted %d of %d, want %d (less at most %d leased and not spent): the day before's leases must not spend in the new day",
					got, calls, limit, tc.stranded)
			}
			if tc.stranded > 0 {
				return // leases may strand units: the counts below are exact without them
			}
			// The refund of a charge made before midnight returns nothing
			// to the new day: "other" still has its whole day but one.
			if got := fire(t, ls[:], "other", limit-1); got != limit-1 {
				t.Fatalf("after midnight, other: admitted %d of %d", got, limit-1)
			}
			if err := ls[1].Refund(context.Background(), "other", 1, charged); err != nil {
				t.Fatal(err)
			}
			if got := fire(t, ls[:], "other", 3); got != 1 {
				t.Fatalf("after a refund of the day before: admitted %d of 3, want 1 (the new day's last)", got)
			}
			for i, l := range ls {
				d, err := l.Peek(context.Background(), "k", 1)
				if err != nil || d.Allowed || !d.ResetAt.Equal(mid.Add(24*time.Hour)) || d.Window != 24*time.Hour {
					t.Fatalf("replica %d: %+v, %v; want refused until %v, a 24-hour window", i, d, err, mid.Add(24*time.Hour))
				}
			}
		})
	}
}

// TestCalendarServerClockFarOff: a replica whose clock is days, or
// decades, off Redis's first sends calendar windows that do not hold
// TIME: that call charges nothing and answers TIME, the store learns how
// far off its clock is and asks again around Redis's, once. The decision
// is Redis's day, charged once; the next call knows the skew and needs
// one round trip. A machine whose clock reset (76 years behind) decides as
// exactly as one on time: WithServerClock depends on Redis's clock alone.
func TestCalendarServerClockFarOff(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	paris := storetest.Zone(t, "Europe/Paris")
	const years76 = 76 * 8766 * time.Hour
	for _, tc := range []struct {
		name string
		p    *limiter.Policy
		skew time.Duration
		opts []Option
	}{
		{"ahead", limiter.MustPolicy("far", limiter.PerDayIn(5, paris)), 72 * time.Hour, nil},
		{"behind_layered", limiter.MustPolicy("far", limiter.PerMinute(5), limiter.PerWeekIn(50, paris)), -15 * 24 * time.Hour, nil},
		{"plain", limiter.MustPolicy("far", limiter.PerDayIn(5, paris)), 72 * time.Hour, []Option{withPath(pathPlain)}},
		{"76_years_behind", limiter.MustPolicy("far", limiter.PerDayIn(5, paris), limiter.PerMinute(5)), -years76, nil},
		{"76_years_ahead_fail_open", limiter.MustPolicy("far", limiter.PerMonthIn(5, paris)), years76, []Option{WithFailOpen()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, c, append([]Option{withClockSource(serverClock), WithOverLimitCache(0)}, tc.opts...)...)
			awaitServerWindow(t, c, time.Minute)
			redisNow := serverTime(t, c)
			clk := limitertest.New(redisNow.Add(tc.skew))
			l := newLimiter(t, tc.p, s, clk)
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || !d.Allowed || d.Remaining != 4 {
				t.Fatalf("Allow with a clock %v off: %+v, %v; want the first of 5", tc.skew, d, err)
			}
			if st := s.Stats(); st.RoundTrips != 2 || st.Degraded != 0 {
				t.Fatalf("first decision: Stats %+v, want 2 round trips (one off the clock), none degraded", st)
			}
			_, d2 := limiter.Decide(tc.p, [limiter.MaxWindows]limiter.State{}, redisNow, 1)
			for i := range tc.p.NumRates() {
				if got, want := d.WindowAt(i).ResetAt, d2.WindowAt(i).ResetAt; !got.Equal(want) {
					t.Fatalf("window %d resets at %v, want Redis's window's end %v", i, got, want)
				}
				id, count, err := serverWindow(ctx, c, keyOf(s, "k", tc.p, i, redisNow))
				if wantID := strconv.FormatInt(windowIDAt(tc.p, i, redisNow), 10); err != nil || id != wantID || count != "1" {
					t.Fatalf("window %d stored %s:%s, %v; want %s:1, charged once in Redis's window", i, id, count, err, wantID)
				}
			}
			if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed || d.Remaining != 3 {
				t.Fatalf("second decision: %+v, %v; want the second of 5", d, err)
			}
			if st := s.Stats(); st.RoundTrips != 3 {
				t.Fatalf("second decision: %d round trips in all, want 3: the skew is known", st.RoundTrips)
			}
		})
	}
}

// windowIDAt returns the id of p's i'th window that holds at.
func windowIDAt(p *limiter.Policy, i int, at time.Time) int64 {
	_, d := limiter.Decide(p, [limiter.MaxWindows]limiter.State{}, at, 1)
	if _, _, ok := p.Rate(i).Calendar(); ok {
		w := d.WindowAt(i)
		return w.ResetAt.Add(-w.Window).UnixMilli()
	}
	return at.UnixMilli() / p.Rate(i).Window.Milliseconds()
}

// TestCalendarExpiry: a window's key lives until its window ends, plus
// the margin, with either clock: a month's key for the rest of the month,
// not two days.
func TestCalendarExpiry(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	paris := storetest.Zone(t, "Europe/Paris")
	const margin = 2 * time.Second
	p := limiter.MustPolicy("ttl", limiter.PerMonthIn(1000, paris), limiter.PerDayIn(100, paris))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			s := newStore(t, c, withClockSource(clock), WithExpiryMargin(margin))
			at := time.Date(2026, 1, 3, 12, 0, 0, 0, paris)
			if clock == serverClock {
				at = serverTime(t, c)
			}
			l := newLimiter(t, p, s, limitertest.New(at))
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || !d.Allowed {
				t.Fatalf("Allow: %+v, %v", d, err)
			}
			y, m, _ := at.In(paris).Date()
			for i, end := range []time.Time{
				time.Date(y, m+1, 1, 0, 0, 0, 0, paris),
				time.Date(at.In(paris).Year(), at.In(paris).Month(), at.In(paris).Day()+1, 0, 0, 0, 0, paris),
			} {
				pttl, err := c.PTTL(ctx, keyOf(s, "k", p, i, at)).Result()
				if err != nil {
					t.Fatal(err)
				}
				// With Redis's clock the key expires at the end plus the
				// margin; with the limiter's, after the window's rest.
				want := end.Sub(at) + margin
				if clock == serverClock {
					want = end.Sub(serverTime(t, c)) + margin
				}
				if diff := pttl - want; diff > time.Second || diff < -time.Second {
					t.Fatalf("window %d: key expires in %v, want %v (its window ends %v)", i, pttl, want, end)
				}
			}
		})
	}
}

// TestCalendarLargestLimit: a month of MaxLimit counts exactly in Redis,
// to its last unit, with either clock: the Lua numbers hold every count
// below 2^53 exactly, and MaxLimit is below 2^50.
func TestCalendarLargestLimit(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	tokyo := storetest.Zone(t, "Asia/Tokyo")
	p := limiter.MustPolicy("max", limiter.PerMonthIn(limiter.MaxLimit, tokyo))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			s := newStore(t, c, withClockSource(clock), WithOverLimitCache(0))
			l := newLimiter(t, p, s, limitertest.New(serverTime(t, c)))
			for _, step := range []struct {
				cost      int64
				allowed   bool
				remaining int64
			}{
				{limiter.MaxLimit - 2, true, 2},
				{1, true, 1},
				{2, false, 1},
				{1, true, 0},
				{1, false, 0},
			} {
				d, err := l.Allow(ctx, "k", step.cost)
				if err != nil || d.Allowed != step.allowed || d.Remaining != step.remaining {
					t.Fatalf("cost %d: %+v, %v; want allowed %v, remaining %d", step.cost, d, err, step.allowed, step.remaining)
				}
			}
		})
	}
}

// TestCalendarReplicasAppClockAcrossMidnight: two replicas (two clients,
// two stores) with the limiter's clock, 50 ms apart, share each
// Kathmandu day's budget exactly, the last moments of one day and the
// first of the next.
func TestCalendarReplicasAppClockAcrossMidnight(t *testing.T) {
	const limit, calls = 20, 60
	kathmandu := storetest.Zone(t, "Asia/Kathmandu")
	mid := time.Date(2026, 5, 4, 0, 0, 0, 0, kathmandu)
	p := limiter.MustPolicy("day", limiter.PerDayIn(limit, kathmandu))
	a, b := limitertest.New(mid.Add(-100*time.Millisecond)), limitertest.New(mid.Add(-50*time.Millisecond))
	ls := twoReplicas(t, p, a, b)
	if got := fire(t, ls[:], "k", calls); got != limit {
		t.Fatalf("before midnight: admitted %d of %d, want exactly %d", got, calls, limit)
	}
	charged, err := ls[0].Allow(context.Background(), "other", 1)
	if err != nil || !charged.Allowed {
		t.Fatalf("a charge before midnight: %+v, %v", charged, err)
	}
	a.Set(mid.Add(20 * time.Millisecond))
	b.Set(mid.Add(70 * time.Millisecond))
	if got := fire(t, ls[:], "k", calls); got != limit {
		t.Fatalf("after midnight: admitted %d of %d, want exactly %d", got, calls, limit)
	}
	// A refund after midnight of a charge made before it returns nothing
	// to the new day.
	if got := fire(t, ls[:], "other", limit); got != limit {
		t.Fatalf("after midnight, other: admitted %d of %d", got, limit)
	}
	if err := ls[1].Refund(context.Background(), "other", 1, charged); err != nil {
		t.Fatal(err)
	}
	if got := fire(t, ls[:], "other", 2); got != 0 {
		t.Fatalf("after a refund of the day before: admitted %d of 2, want 0", got)
	}
}

// TestCalendarReset: Reset forgets a calendar window's count with either
// clock, and the key's whole day is admitted again.
func TestCalendarReset(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	apia := storetest.Zone(t, "Pacific/Apia")
	p := limiter.MustPolicy("reset", limiter.PerDayIn(3, apia), limiter.PerMinute(10))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			s := newStore(t, c, withClockSource(clock))
			l := newLimiter(t, p, s, limitertest.New(serverTime(t, c)))
			if got := admitted(t, l, "k", 5, nil); got != 3 {
				t.Fatalf("admitted %d of 5, want 3", got)
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if got := admitted(t, l, "k", 5, nil); got != 3 {
				t.Fatalf("after Reset: admitted %d of 5, want 3", got)
			}
		})
	}
}

// TestCalendarRefund: a refund returns a charge to a calendar window
// while it is current, with either clock, and through a lease.
func TestCalendarRefund(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	eucla := storetest.Zone(t, "Australia/Eucla")
	p := limiter.MustPolicy("refund", limiter.PerWeekIn(2, eucla))
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, leased := range []bool{false, true} {
			name := clock.String()
			opts := []Option{withClockSource(clock)}
			if leased {
				name += "/leases"
				opts = append(opts, WithLeases(time.Second, 1))
			}
			t.Run(name, func(t *testing.T) {
				s := newStore(t, c, opts...)
				l := newLimiter(t, p, s, limitertest.New(serverTime(t, c)))
				var last limiter.Decision
				for range 2 {
					d, err := l.Allow(ctx, "k", 1)
					if err != nil || !d.Allowed {
						t.Fatalf("Allow: %+v, %v", d, err)
					}
					last = d
				}
				if d, err := l.Allow(ctx, "k", 1); err != nil || d.Allowed {
					t.Fatalf("third of 2: %+v, %v; want refused", d, err)
				}
				if err := l.Refund(ctx, "k", 1, last); err != nil {
					t.Fatal(err)
				}
				if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Fatalf("after a refund: %+v, %v; want admitted", d, err)
				}
				if d, err := l.Allow(ctx, "k", 1); err != nil || d.Allowed {
					t.Fatalf("after a refund and its use: %+v, %v; want refused", d, err)
				}
			})
		}
	}
}

// TestCalendarServerClockWindowAhead: with Redis's clock, a calendar
// window stored ahead of TIME (a faster clock's, or Redis's stepped
// back) follows the rule for a window ahead: within the policy's
// shortest window (here a minute) the request is decided in it, never
// rewinding its count; further ahead it is stale and TIME's own day
// starts afresh. The zone's midnight is put 30 s, then 3 minutes, after
// TIME, and the key holds the next day, full.
func TestCalendarServerClockWindowAhead(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		ahead   time.Duration // the next midnight, after TIME
		allowed bool
	}{
		{"next_day_30s_ahead_decides_in_it", 30 * time.Second, false},
		{"next_day_3m_ahead_is_stale", 3 * time.Minute, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := serverTime(t, c)
			mid := now.Add(tc.ahead).Truncate(time.Second)
			p := limiter.MustPolicy("ahead", limiter.PerDayIn(5, zoneWithMidnightAt(mid)), limiter.PerMinute(100))
			s := newStore(t, c, withClockSource(serverClock), WithOverLimitCache(0))
			l := newLimiter(t, p, s, limitertest.New(now))
			key := keyOf(s, "k", p, 0, now)
			if err := c.Set(ctx, key, serverValue(mid.UnixMilli(), 5), 0).Err(); err != nil {
				t.Fatal(err)
			}
			if err := c.PExpire(ctx, key, tc.ahead+24*time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || d.Allowed != tc.allowed {
				t.Fatalf("next day stored full, %v ahead: %+v, %v; want allowed %v", tc.ahead, d, err, tc.allowed)
			}
			wantReset := mid // TIME's own day
			if !tc.allowed {
				wantReset = mid.Add(24 * time.Hour) // the day ahead, decided in
			}
			if ws := d.WindowAt(0); !ws.ResetAt.Equal(wantReset) {
				t.Fatalf("the day's window resets at %v, want %v", ws.ResetAt, wantReset)
			}
			gotW, gotC, err := serverWindow(ctx, c, key)
			if err != nil {
				t.Fatal(err)
			}
			wantW, wantC := strconv.FormatInt(mid.UnixMilli(), 10), "5"
			if tc.allowed {
				wantW, wantC = strconv.FormatInt(mid.Add(-24*time.Hour).UnixMilli(), 10), "1"
			}
			if gotW != wantW || gotC != wantC {
				t.Fatalf("stored %s:%s, want %s:%s", gotW, gotC, wantW, wantC)
			}
		})
	}
}
