package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// Over random bursts around a local midnight (São Paulo's that does not
// exist, Paris's spring-forward one, Kathmandu's at +5:45), the calendar
// fixed window admits at most the limit per key per local day, and at
// most twice it in any span of Window; the layered limiter at most
// CalendarLayeredBound.
func TestPropertyCalendarBounds(t *testing.T) {
	zones := map[string]time.Time{}
	for _, z := range []struct {
		name string
		mid  [3]int
	}{
		{"America/Sao_Paulo", [3]int{2018, 11, 4}},
		{"Europe/Paris", [3]int{2026, 3, 29}},
		{"Asia/Kathmandu", [3]int{2026, 5, 4}},
	} {
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Fatal(err)
		}
		// The first instant of the day: 01:00 in São Paulo, where
		// midnight was skipped.
		mid := time.Date(z.mid[0], time.Month(z.mid[1]), z.mid[2], 0, 0, 0, 0, loc)
		if y, m, d := mid.Date(); d != z.mid[2] || m != time.Month(z.mid[1]) || y != z.mid[0] {
			mid = mid.Add(time.Hour)
		}
		zones[z.name] = mid
	}
	names := []string{"America/Sao_Paulo", "Europe/Paris", "Asia/Kathmandu"}
	rapid.Check(t, func(t *rapid.T) {
		name := rapid.SampledFrom(names).Draw(t, "zone")
		mid := zones[name]
		cfg := Config{
			Limit:    rapid.Int64Range(1, 20).Draw(t, "limit"),
			Window:   time.Duration(rapid.IntRange(1, 400).Draw(t, "window_5ms")) * 5 * time.Millisecond,
			Calendar: "day",
			Zone:     mid.Location(),
		}
		// The pattern's 0 s is up to two windows before midnight.
		cfg.Start = mid.Add(-time.Duration(rapid.Int64Range(0, 2*int64(cfg.Window)).Draw(t, "lead")))
		keys := []string{"a", "b"}[:rapid.IntRange(1, 2).Draw(t, "keys")]
		p := &Pattern{Name: "random"}
		for range rapid.IntRange(1, 6).Draw(t, "bursts") {
			key := rapid.SampledFrom(keys).Draw(t, "key")
			at := rapid.Int64Range(0, 4*int64(cfg.Window)).Draw(t, "at")
			n := rapid.Int64Range(1, 2*cfg.Limit+2).Draw(t, "n")
			width := rapid.Int64Range(0, int64(cfg.Window)).Draw(t, "width")
			for i := range n {
				p.Requests = append(p.Requests, Request{At: time.Duration(at + width*i/n), Key: key})
			}
		}
		sortRequests(p)
		long, short, err := LayeredRates(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rs, err := Simulate(context.Background(), p, cfg, []string{FixedWindow, Layered})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			perDay := map[[2]string]int64{}
			for i, req := range p.Requests {
				if r.Admitted[i] {
					perDay[[2]string{req.Key, cfg.Start.Add(req.At).In(cfg.Zone).Format(time.DateOnly)}]++
				}
			}
			for day, n := range perDay {
				if n > cfg.Limit {
					t.Fatalf("%s: key %s admitted %d on %s, limit %d a day", r.Limiter, day[0], n, day[1], cfg.Limit)
				}
			}
			bound := 2 * cfg.Limit
			if r.Limiter == Layered {
				bound = CalendarLayeredBound(long, short, cfg.Window)
			}
			if got := int64(r.WorstPerKey(p, cfg.Window)); got > bound {
				t.Fatalf("%s: worst span of %v for one key %d > bound %d", r.Limiter, cfg.Window, got, bound)
			}
		}
	})
}

func TestCalendarConfig(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Limit: 10, Window: time.Second, Calendar: "day", Zone: paris}
	for _, name := range []string{SlidingLog, TokenBucket} {
		if _, err := New(name, cfg, 1); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%s) with a calendar: %v, want ErrInvalidConfig", name, err)
		}
	}
	for _, bad := range []Config{
		{Limit: 10, Window: time.Second, Calendar: "day"},
		{Limit: 10, Window: time.Second, Calendar: "year", Zone: paris},
	} {
		if err := bad.Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("Validate(%+v) = %v, want ErrInvalidConfig", bad, err)
		}
	}
	long, short, err := LayeredRates(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := CalendarLayeredBound(long, short, cfg.Window); got != 12 {
		t.Errorf("bound of 10 a day and 2 per 200ms over 1s: %d, want 12", got)
	}
}
