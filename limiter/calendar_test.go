package limiter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestMemoryStoreCalendar crosses a spring-forward day, an autumn day,
// February of a leap year, a Monday in zones 45 minutes off the hour, a
// day with no midnight and a month over a minute on the memory store.
func TestMemoryStoreCalendar(t *testing.T) {
	t.Parallel()
	storetest.RunCalendar(t, newMemoryStepStore(4), storetest.CalendarRows(t, ""))
}

func TestCalendarPolicyValidation(t *testing.T) {
	t.Parallel()
	paris := storetest.Zone(t, "Europe/Paris")
	day := limiter.PerDayIn(10, paris)
	withWindow := day
	withWindow.Window = time.Hour
	tests := []struct {
		name    string
		rates   []limiter.Rate
		wantErr string // substring; empty means valid
	}{
		{"day", []limiter.Rate{day}, ""},
		{"week_and_month", []limiter.Rate{limiter.PerWeekIn(100, paris), limiter.PerMonthIn(1000, paris)}, ""},
		{"month_of_a_hundred_million", []limiter.Rate{limiter.PerMonthIn(100_000_000, paris)}, ""},
		{"month_of_max_limit", []limiter.Rate{limiter.PerMonthIn(limiter.MaxLimit, paris)}, ""},
		{"day_in_paris_and_day_in_utc", []limiter.Rate{day, limiter.PerDayIn(20, time.UTC)}, ""},
		{"day_beside_24h", []limiter.Rate{limiter.PerDayIn(10, time.UTC), {Limit: 10, Window: 24 * time.Hour}}, ""},
		{"fixed_zone", []limiter.Rate{limiter.PerDayIn(10, time.FixedZone("UTC+5", 5*3600))}, ""},
		{"nil_location", []limiter.Rate{limiter.PerDayIn(10, nil)}, `rate #1 (10/day@<nil>): location is nil`},
		{"zero_limit", []limiter.Rate{limiter.PerMonthIn(0, paris)}, `rate #1 (0/month@Europe/Paris): limit 0 must be > 0`},
		{"negative_limit", []limiter.Rate{limiter.PerWeekIn(-1, paris)}, `rate #1 (-1/week@Europe/Paris): limit -1 must be > 0`},
		{"over_max_limit", []limiter.Rate{limiter.PerMonthIn(limiter.MaxLimit+1, paris)}, "exceeds MaxLimit"},
		{"window_set", []limiter.Rate{withWindow}, "a calendar rate has no Window"},
		{"machine_zone", []limiter.Rate{limiter.PerDayIn(10, time.Local)}, `"Local" is the machine's own zone`},
		{"unnamed_zone", []limiter.Rate{limiter.PerDayIn(10, time.FixedZone("", 3600))}, "location name"},
		{"zone_name_with_colon", []limiter.Rate{limiter.PerDayIn(10, time.FixedZone("UTC+05:45", 5*3600+45*60))}, `has character ':'`},
		{"same_day_twice", []limiter.Rate{day, limiter.PerDayIn(5, paris)}, "two rates for window day@Europe/Paris"},
		{"second_rate_named", []limiter.Rate{limiter.PerMinute(5), limiter.PerMonthIn(0, paris)}, "rate #2 (0/month@Europe/Paris)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := limiter.NewPolicy("plan", tt.rates...)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewPolicy(%v) = %v, want no error", tt.rates, err)
				}
				return
			}
			if err == nil || !errors.Is(err, limiter.ErrInvalidPolicy) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewPolicy(%v) = %v, %v; want an ErrInvalidPolicy containing %q", tt.rates, p, err, tt.wantErr)
			}
		})
	}
}

func TestCalendarPolicyNames(t *testing.T) {
	t.Parallel()
	paris, tokyo := storetest.Zone(t, "Europe/Paris"), storetest.Zone(t, "Asia/Tokyo")
	p := limiter.MustPolicy("plan", limiter.PerMonthIn(1_000_000, paris), limiter.PerMinute(600))
	if got, want := p.ID(), "plan:month@Europe/Paris:60000"; got != want {
		t.Errorf("ID() = %q, want %q", got, want)
	}
	if got, want := p.String(), "plan: 1000000/month@Europe/Paris + 600/1m0s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if other := limiter.MustPolicy("plan", limiter.PerMonthIn(1_000_000, tokyo), limiter.PerMinute(600)); other.ID() == p.ID() {
		t.Errorf("plans in Paris and Tokyo share the ID %q", p.ID())
	}
	r := p.Rate(0)
	if period, loc, ok := r.Calendar(); !ok || period != "month" || loc != paris || r.Window != 0 {
		t.Errorf("Rate(0).Calendar() = %q, %v, %v; Window %v: want month, Europe/Paris, true, 0", period, loc, ok, r.Window)
	}
	if _, _, ok := p.Rate(1).Calendar(); ok {
		t.Error("PerMinute(600).Calendar() reports a calendar rate")
	}
	// A rate copied with a new limit stays in its calendar.
	r.Limit = 5
	if q := limiter.MustPolicy("low", r); q.ID() != "low:month@Europe/Paris" || q.Rate(0).Limit != 5 {
		t.Errorf("a copied calendar rate with limit 5: ID %q, limit %d", q.ID(), q.Rate(0).Limit)
	}
}

// TestCalendarWindowsOfALayeredDecision: every window of a decision
// reports its own length and reset, the calendar one its local boundary.
func TestCalendarWindowsOfALayeredDecision(t *testing.T) {
	t.Parallel()
	paris := storetest.Zone(t, "Europe/Paris")
	p := limiter.MustPolicy("plan", limiter.PerMinute(600), limiter.PerDayIn(1000, paris), limiter.Rate{Limit: 2000, Window: 24 * time.Hour})
	at := time.Date(2026, 3, 29, 12, 0, 30, 0, paris) // a 23-hour day
	_, d := limiter.Decide(p, [limiter.MaxWindows]limiter.State{}, at, 1)
	want := []struct {
		window time.Duration
		reset  time.Time
	}{
		{time.Minute, time.Date(2026, 3, 29, 12, 1, 0, 0, paris)},
		{23 * time.Hour, time.Date(2026, 3, 30, 0, 0, 0, 0, paris)},
		{24 * time.Hour, time.Date(2026, 3, 30, 0, 0, 0, 0, time.UTC)},
	}
	for i, w := range want {
		ws := d.WindowAt(i)
		if ws.Window != w.window || !ws.ResetAt.Equal(w.reset) {
			t.Errorf("WindowAt(%d) = %v resetting %v, want %v resetting %v", i, ws.Window, ws.ResetAt, w.window, w.reset)
		}
	}
	if d.Window != time.Minute {
		t.Errorf("deciding window %v, want the minute (least remaining)", d.Window)
	}
}

// TestCalendarDecideAtExtremeInstants: instants at the ends of what
// Decide accepts still get a window that holds them.
func TestCalendarDecideAtExtremeInstants(t *testing.T) {
	t.Parallel()
	p := limiter.MustPolicy("far", limiter.PerMonthIn(1, storetest.Zone(t, "America/New_York")))
	for _, at := range []time.Time{time.UnixMilli(1 << 62), time.UnixMilli(-1 << 62), time.Unix(1<<62, 0), time.Unix(-1<<62, 0), {}} {
		next, d := limiter.Decide(p, [limiter.MaxWindows]limiter.State{}, at, 1)
		if !d.Allowed || d.Window < 28*24*time.Hour || d.Window > 31*24*time.Hour+time.Hour || next[0].Window > d.DecidedAt().UnixMilli() || !d.ResetAt.After(d.DecidedAt()) {
			t.Errorf("Decide at %v: %+v, state %+v", at, d, next[0])
		}
	}
}

// TestCalendarRefundAcrossMidnight: a charge refunded after the local
// midnight that ended its day returns nothing; one refunded before does.
func TestCalendarRefundAcrossMidnight(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	kathmandu := storetest.Zone(t, "Asia/Kathmandu")
	midnight := time.Date(2026, 5, 4, 0, 0, 0, 0, kathmandu)
	clk := limitertest.New(midnight.Add(-200 * time.Millisecond))
	l, err := limiter.New(limiter.MustPolicy("day", limiter.PerDayIn(1, kathmandu)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	d, err := l.Allow(ctx, "k", 1)
	if err != nil || !d.Allowed {
		t.Fatalf("first of the day: %+v, %v", d, err)
	}
	clk.Advance(100 * time.Millisecond)
	if err := l.Refund(ctx, "k", 1, d); err != nil {
		t.Fatal(err)
	}
	if d, err = l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("after a refund in the same day: %+v, %v; want admitted", d, err)
	}
	clk.Set(midnight.Add(100 * time.Millisecond))
	if err := l.Refund(ctx, "k", 1, d); err != nil {
		t.Fatal(err)
	}
	if d, err = l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
		t.Fatalf("first of the next day: %+v, %v", d, err)
	}
	if d, err = l.Allow(ctx, "k", 1); err != nil || d.Allowed {
		t.Fatalf("second of the next day, after a refund of the day before: %+v, %v; want refused", d, err)
	}
}

// TestCalendarClockSteps: the memory store's rule for a window ahead of
// a request holds with calendar windows. A step back of a second across
// local midnight decides in the new day (its count is never rewound); a
// step back of more than a day finds the new day's table stale, and the
// request is decided in its own day, afresh. A step forward by a month
// and back costs one window of wrong answers and no lockout.
func TestCalendarClockSteps(t *testing.T) {
	t.Parallel()
	paris := storetest.Zone(t, "Europe/Paris")
	midnight := time.Date(2026, 10, 26, 0, 0, 0, 0, paris)
	p := limiter.MustPolicy("steps", limiter.PerDayIn(2, paris))
	type step struct {
		at           time.Time
		send, admit  int
		wantResetDay int // the day of October the deciding window ends on
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"back_1s_across_midnight_decides_in_the_new_day", []step{
			{midnight, 1, 1, 27},
			{midnight.Add(-time.Second), 2, 1, 27},
			{midnight.Add(time.Hour), 1, 0, 27},
		}},
		{"back_more_than_a_day_is_stale", []step{
			{midnight, 2, 2, 27},
			{midnight.Add(-25*time.Hour - time.Second), 3, 2, 25}, // the 25-hour day before
			{midnight.Add(time.Hour), 3, 2, 27},
		}},
		{"forward_a_month_and_back", []step{
			{midnight, 1, 1, 27},
			{midnight.AddDate(0, 1, 0), 3, 2, 0},
			{midnight.Add(time.Hour), 3, 2, 27},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := limitertest.New(tc.steps[0].at)
			l, err := limiter.New(p, limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			for i, st := range tc.steps {
				clk.Set(st.at)
				for k := range st.send {
					d, err := l.Allow(context.Background(), "k", 1)
					if err != nil || d.Allowed != (k < st.admit) {
						t.Fatalf("step %d request %d: %+v, %v; want allowed %v", i, k+1, d, err, k < st.admit)
					}
					if r := d.ResetAt.In(paris); st.wantResetDay != 0 && (r.Day() != st.wantResetDay || r.Month() != time.October || r.Hour() != 0) {
						t.Fatalf("step %d request %d: reset at %v, want 00:00 on the %dth", i, k+1, r, st.wantResetDay)
					}
					if !d.Allowed && d.RetryAfter > 25*time.Hour+time.Second {
						t.Fatalf("step %d: refusal asks to wait %v, more than a day and the step", i, d.RetryAfter)
					}
				}
			}
		})
	}
}

// TestCalendarConcurrentAcrossMidnight: goroutines racing across a local
// midnight on one key get exactly each day's limit.
func TestCalendarConcurrentAcrossMidnight(t *testing.T) {
	t.Parallel()
	const limit = 50
	eucla := storetest.Zone(t, "Australia/Eucla")
	midnight := time.Date(2026, 5, 4, 0, 0, 0, 0, eucla)
	l, err := limiter.New(limiter.MustPolicy("race", limiter.PerDayIn(limit, eucla)), limiter.WithClock(limitertest.New(midnight)))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var before, after atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				// Half the requests read the clock 1 ms before midnight,
				// half at it, interleaved.
				at := midnight
				if (i+g)%2 == 0 {
					at = midnight.Add(-time.Millisecond)
				}
				d, err := l.AllowAt(context.Background(), "k", 1, at)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed && d.ResetAt.Equal(midnight) {
					before.Add(1)
				} else if d.Allowed {
					after.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	// A request from the day before that comes after the new day's
	// first is decided in the new day (a window ahead by less than the
	// shortest window): the two days together admit at most 2 × limit,
	// the new day exactly its limit.
	if after.Load() != limit || before.Load()+after.Load() > 2*limit {
		t.Fatalf("admitted %d in the day before and %d in the new day, want the new day exactly %d", before.Load(), after.Load(), limit)
	}
}

// TestCalendarTablesShared: policies in one zone share the memory
// store's table of that zone's days; another zone has its own. Resets
// forget the key's calendar counter.
func TestCalendarTablesShared(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	paris, tokyo := storetest.Zone(t, "Europe/Paris"), storetest.Zone(t, "Asia/Tokyo")
	at := time.Date(2026, 7, 31, 23, 30, 0, 0, paris) // 06:30 on the 1st in Tokyo
	st, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0), limiter.WithShards(1))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ls []*limiter.Limiter
	for _, p := range []*limiter.Policy{
		limiter.MustPolicy("a", limiter.PerDayIn(1, paris)),
		limiter.MustPolicy("b", limiter.PerDayIn(1, paris)),
		limiter.MustPolicy("c", limiter.PerDayIn(1, tokyo)),
	} {
		l, err := limiter.New(p, limiter.WithStore(st), limiter.WithClock(limitertest.New(at)))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	for i, l := range ls {
		if d, _ := l.Allow(ctx, "k", 1); !d.Allowed {
			t.Fatalf("policy %d: first refused", i)
		}
		if d, _ := l.Allow(ctx, "k", 1); d.Allowed {
			t.Fatalf("policy %d: second admitted", i)
		}
	}
	if n := st.Stats().Keys; n != 3 {
		t.Fatalf("store holds %d counters, want 3", n)
	}
	if err := ls[2].Reset(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if d, _ := ls[2].Allow(ctx, "k", 1); !d.Allowed {
		t.Fatal("after Reset, Tokyo's day refused")
	}
	if d, _ := ls[0].Allow(ctx, "k", 1); d.Allowed {
		t.Fatal("Paris's day admitted after Tokyo's Reset")
	}
}
