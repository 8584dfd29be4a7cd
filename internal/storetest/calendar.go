package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// A CalendarRow is a calendar policy and the instants a fake clock visits,
// in the order given, with what the limiter must answer at each.
type CalendarRow struct {
	Name   string
	Policy *limiter.Policy
	Steps  []CalendarStep
}

// A CalendarStep sets the clock to At and sends Send requests of cost 1
// for "k"; the first Admit are admitted, the rest refused. Every answer
// names the deciding window: it resets at ResetAt and lasts Window (the
// window's own length: 23 hours on a spring-forward day), and a refusal
// asks to retry after ResetAt − At.
type CalendarStep struct {
	At          time.Time
	Send, Admit int
	ResetAt     time.Time
	Window      time.Duration
}

// Zone loads a zone of the tz database, failing the test when it cannot.
func Zone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v (a system without tzdata needs the time/tzdata package)", name, err)
	}
	return loc
}

// CalendarRows returns the calendar rows every store must pass: a day
// that springs forward (23 hours) and one that falls back (25), February
// of a leap year, a Monday in zones 45 minutes off the hour (Eucla
// +8:45, Kathmandu +5:45), a day whose midnight does not exist, and a
// month layered over a minute across the 1st. The name of each policy
// carries prefix, so that rows on a shared server keep apart.
func CalendarRows(t *testing.T, prefix string) []CalendarRow {
	t.Helper()
	paris := Zone(t, "Europe/Paris")
	eucla := Zone(t, "Australia/Eucla")
	kathmandu := Zone(t, "Asia/Kathmandu")
	saoPaulo := Zone(t, "America/Sao_Paulo")
	in := func(loc *time.Location, y int, m time.Month, d, h, mi, s int) time.Time {
		return time.Date(y, m, d, h, mi, s, 0, loc)
	}
	const hour = time.Hour
	policy := func(name string, rates ...limiter.Rate) *limiter.Policy {
		t.Helper()
		p, err := limiter.NewPolicy(prefix+name, rates...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	return []CalendarRow{
		{"spring_forward_day_is_23h", policy("spring", limiter.PerDayIn(3, paris)), []CalendarStep{
			{in(paris, 2026, 3, 29, 0, 0, 0), 2, 2, in(paris, 2026, 3, 30, 0, 0, 0), 23 * hour},
			{in(paris, 2026, 3, 29, 3, 30, 0), 2, 1, in(paris, 2026, 3, 30, 0, 0, 0), 23 * hour},
			{in(paris, 2026, 3, 29, 23, 59, 59), 1, 0, in(paris, 2026, 3, 30, 0, 0, 0), 23 * hour},
			{in(paris, 2026, 3, 30, 0, 0, 0), 4, 3, in(paris, 2026, 3, 31, 0, 0, 0), 24 * hour},
		}},
		{"autumn_day_is_25h", policy("autumn", limiter.PerDayIn(2, paris)), []CalendarStep{
			{in(paris, 2026, 10, 25, 0, 30, 0), 1, 1, in(paris, 2026, 10, 26, 0, 0, 0), 25 * hour},
			// 02:30 happens twice; the second is an hour later, the same day.
			{in(paris, 2026, 10, 25, 2, 30, 0).Add(hour), 2, 1, in(paris, 2026, 10, 26, 0, 0, 0), 25 * hour},
			{in(paris, 2026, 10, 26, 0, 0, 0).Add(-time.Millisecond), 1, 0, in(paris, 2026, 10, 26, 0, 0, 0), 25 * hour},
			{in(paris, 2026, 10, 26, 0, 0, 0), 3, 2, in(paris, 2026, 10, 27, 0, 0, 0), 24 * hour},
		}},
		{"february_of_a_leap_year", policy("leap", limiter.PerMonthIn(5, paris)), []CalendarStep{
			{in(paris, 2028, 2, 1, 0, 0, 0), 3, 3, in(paris, 2028, 3, 1, 0, 0, 0), 29 * 24 * hour},
			{in(paris, 2028, 2, 29, 23, 59, 59), 3, 2, in(paris, 2028, 3, 1, 0, 0, 0), 29 * 24 * hour},
			{in(paris, 2028, 3, 1, 0, 0, 0), 6, 5, in(paris, 2028, 4, 1, 0, 0, 0), 31*24*hour - hour},
		}},
		{"monday_in_eucla_845", policy("eucla", limiter.PerWeekIn(2, eucla)), []CalendarStep{
			{in(eucla, 2026, 5, 3, 23, 59, 0), 3, 2, in(eucla, 2026, 5, 4, 0, 0, 0), 7 * 24 * hour},
			{in(eucla, 2026, 5, 4, 0, 0, 0), 3, 2, in(eucla, 2026, 5, 11, 0, 0, 0), 7 * 24 * hour},
			{in(eucla, 2026, 5, 10, 23, 59, 59), 1, 0, in(eucla, 2026, 5, 11, 0, 0, 0), 7 * 24 * hour},
		}},
		{"monday_in_kathmandu_545", policy("kathmandu", limiter.PerDayIn(1, kathmandu)), []CalendarStep{
			{in(kathmandu, 2026, 5, 3, 23, 0, 0), 2, 1, in(kathmandu, 2026, 5, 4, 0, 0, 0), 24 * hour},
			{in(kathmandu, 2026, 5, 4, 0, 0, 0), 2, 1, in(kathmandu, 2026, 5, 5, 0, 0, 0), 24 * hour},
		}},
		// The 4th of November 2018 had no midnight in São Paulo: it began
		// at 01:00, the instant of the change, so 00:30 was never read.
		{"midnight_that_does_not_exist", policy("gap", limiter.PerDayIn(1, saoPaulo)), []CalendarStep{
			{in(saoPaulo, 2018, 11, 3, 23, 59, 59), 2, 1, in(saoPaulo, 2018, 11, 4, 1, 0, 0), 24 * hour},
			{in(saoPaulo, 2018, 11, 4, 1, 0, 0), 2, 1, in(saoPaulo, 2018, 11, 5, 0, 0, 0), 23 * hour},
		}},
		// A month with a minute under it: the minute refuses first, and the
		// month's budget carries over minutes but not over the 1st.
		{"month_over_minute_across_the_1st", policy("plan", limiter.PerMonthIn(4, paris), limiter.PerMinute(3)), []CalendarStep{
			{in(paris, 2026, 1, 31, 23, 58, 0), 4, 3, in(paris, 2026, 1, 31, 23, 59, 0), time.Minute},
			{in(paris, 2026, 1, 31, 23, 59, 0), 2, 1, in(paris, 2026, 2, 1, 0, 0, 0), 31 * 24 * hour},
			{in(paris, 2026, 2, 1, 0, 0, 0), 4, 3, in(paris, 2026, 2, 1, 0, 1, 0), time.Minute},
			{in(paris, 2026, 2, 1, 0, 1, 0), 2, 1, in(paris, 2026, 3, 1, 0, 0, 0), 28 * 24 * hour},
		}},
	}
}

// RunCalendar runs rows, in parallel, each on a fresh store from newStore
// under a limiter sharing the row's fake clock.
func RunCalendar(t *testing.T, newStore NewStore, rows []CalendarRow) {
	t.Helper()
	for _, row := range rows {
		t.Run(row.Name, func(t *testing.T) {
			t.Parallel()
			clk := limitertest.New(row.Steps[0].At)
			l, err := limiter.New(row.Policy, limiter.WithStore(newStore(t, clk)), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			for i, st := range row.Steps {
				clk.Set(st.At)
				for k := range st.Send {
					d, err := l.Allow(context.Background(), "k", 1)
					if err != nil {
						t.Fatalf("step %d at %v: request %d: %v", i, st.At, k+1, err)
					}
					if want := k < st.Admit; d.Allowed != want {
						t.Fatalf("step %d at %v: request %d of %d: allowed %v, want %v (the first %d admitted); %+v",
							i, st.At, k+1, st.Send, d.Allowed, want, st.Admit, d)
					}
					if !d.ResetAt.Equal(st.ResetAt) || d.Window != st.Window {
						t.Fatalf("step %d at %v: request %d: reset at %v, window %v; want %v, %v",
							i, st.At, k+1, d.ResetAt.In(st.At.Location()), d.Window, st.ResetAt, st.Window)
					}
					if retry := st.ResetAt.Sub(st.At); !d.Allowed && d.RetryAfter != retry {
						t.Fatalf("step %d at %v: refusal asks to retry after %v, want %v (to the boundary)", i, st.At, d.RetryAfter, retry)
					}
				}
			}
		})
	}
}
