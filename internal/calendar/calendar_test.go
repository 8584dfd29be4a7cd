package calendar

import (
	"encoding/binary"
	"testing"
	"time"
)

// load returns the zone name, failing the test when it cannot be loaded.
func load(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	return loc
}

// at returns the instant of a wall-clock reading in loc that exists once.
func at(loc *time.Location, y int, m time.Month, d, h, min int) int64 {
	return time.Date(y, m, d, h, min, 0, 0, loc).UnixMilli()
}

func TestWindow(t *testing.T) {
	t.Parallel()
	paris := load(t, "Europe/Paris")
	saoPaulo := load(t, "America/Sao_Paulo")
	havana := load(t, "America/Havana")
	tehran := load(t, "Asia/Tehran")
	apia := load(t, "Pacific/Apia")
	kathmandu := load(t, "Asia/Kathmandu")
	eucla := load(t, "Australia/Eucla")
	lordHowe := load(t, "Australia/Lord_Howe")
	utc := time.UTC
	utcAt := func(y int, m time.Month, d, h, min int) int64 { return at(utc, y, m, d, h, min) }
	h := int64(time.Hour / time.Millisecond)
	tests := []struct {
		name       string
		loc        *time.Location
		p          Period
		ms         int64
		start, end int64
		wantLen    int64 // end − start, in hours (in minutes where named)
	}{
		{"paris_ordinary_day", paris, Day, at(paris, 2026, 7, 31, 12, 0),
			utcAt(2026, 7, 30, 22, 0), utcAt(2026, 7, 31, 22, 0), 24},
		{"paris_spring_forward_is_23h", paris, Day, at(paris, 2026, 3, 29, 12, 0),
			utcAt(2026, 3, 28, 23, 0), utcAt(2026, 3, 29, 22, 0), 23},
		{"paris_autumn_is_25h", paris, Day, at(paris, 2026, 10, 25, 12, 0),
			utcAt(2026, 10, 24, 22, 0), utcAt(2026, 10, 25, 23, 0), 25},
		{"paris_first_ms_of_day", paris, Day, utcAt(2026, 7, 30, 22, 0),
			utcAt(2026, 7, 30, 22, 0), utcAt(2026, 7, 31, 22, 0), 24},
		{"paris_last_ms_of_day", paris, Day, utcAt(2026, 7, 31, 22, 0) - 1,
			utcAt(2026, 7, 30, 22, 0), utcAt(2026, 7, 31, 22, 0), 24},
		// Brazil's clocks sprang forward at 00:00 until 2019: the 4th
		// of November 2018 began at 01:00 -02, the instant of the change.
		{"sao_paulo_midnight_missing_starts_at_change", saoPaulo, Day, at(saoPaulo, 2018, 11, 4, 12, 0),
			utcAt(2018, 11, 4, 3, 0), utcAt(2018, 11, 5, 2, 0), 23},
		{"sao_paulo_day_before_the_gap_ends_at_change", saoPaulo, Day, at(saoPaulo, 2018, 11, 3, 23, 30),
			utcAt(2018, 11, 3, 3, 0), utcAt(2018, 11, 4, 3, 0), 24},
		// And fell back at 00:00 to 23:00: the 16th of February 2019
		// lasted 25 hours, its last hour read 23:00 twice.
		{"sao_paulo_fall_back_at_midnight_25h", saoPaulo, Day, at(saoPaulo, 2019, 2, 16, 12, 0),
			utcAt(2019, 2, 16, 2, 0), utcAt(2019, 2, 17, 3, 0), 25},
		{"havana_midnight_missing", havana, Day, at(havana, 2024, 3, 10, 12, 0),
			utcAt(2024, 3, 10, 5, 0), utcAt(2024, 3, 11, 4, 0), 23},
		{"tehran_fall_back_at_midnight", tehran, Day, at(tehran, 2021, 9, 21, 12, 0),
			utcAt(2021, 9, 20, 19, 30), utcAt(2021, 9, 21, 20, 30), 25},
		// Samoa skipped the 30th of December 2011: the 29th ends where
		// the 31st begins.
		{"apia_day_before_skipped_date", apia, Day, at(apia, 2011, 12, 29, 12, 0),
			utcAt(2011, 12, 29, 10, 0), utcAt(2011, 12, 30, 10, 0), 24},
		{"apia_day_after_skipped_date", apia, Day, at(apia, 2011, 12, 31, 12, 0),
			utcAt(2011, 12, 30, 10, 0), utcAt(2011, 12, 31, 10, 0), 24},
		{"kathmandu_545", kathmandu, Day, at(kathmandu, 2026, 5, 4, 9, 0),
			utcAt(2026, 5, 3, 18, 15), utcAt(2026, 5, 4, 18, 15), 24},
		{"eucla_845_monday_week", eucla, Week, at(eucla, 2026, 5, 4, 0, 0),
			utcAt(2026, 5, 3, 15, 15), utcAt(2026, 5, 10, 15, 15), 168},
		{"eucla_845_sunday_late_is_previous_week", eucla, Week, at(eucla, 2026, 5, 3, 23, 59),
			utcAt(2026, 4, 26, 15, 15), utcAt(2026, 5, 3, 15, 15), 168},
		// Lord Howe moves its clocks by half an hour.
		{"lord_howe_half_hour_dst_day_24h30", lordHowe, Day, at(lordHowe, 2026, 4, 5, 12, 0),
			utcAt(2026, 4, 4, 13, 0), utcAt(2026, 4, 5, 13, 30), 24*60 + 30},
		{"week_across_new_year", utc, Week, utcAt(2027, 1, 1, 12, 0),
			utcAt(2026, 12, 28, 0, 0), utcAt(2027, 1, 4, 0, 0), 168},
		{"week_with_spring_forward_167h", paris, Week, at(paris, 2026, 3, 25, 12, 0),
			utcAt(2026, 3, 22, 23, 0), utcAt(2026, 3, 29, 22, 0), 167},
		{"february_leap_29_days", paris, Month, at(paris, 2028, 2, 29, 23, 59),
			utcAt(2028, 1, 31, 23, 0), utcAt(2028, 2, 29, 23, 0), 29 * 24},
		{"february_2100_not_leap", utc, Month, utcAt(2100, 2, 14, 0, 0),
			utcAt(2100, 2, 1, 0, 0), utcAt(2100, 3, 1, 0, 0), 28 * 24},
		{"april_30_days", utc, Month, utcAt(2026, 4, 30, 23, 59),
			utcAt(2026, 4, 1, 0, 0), utcAt(2026, 5, 1, 0, 0), 30 * 24},
		{"march_paris_31_days_less_an_hour", paris, Month, at(paris, 2026, 3, 1, 0, 0),
			utcAt(2026, 2, 28, 23, 0), utcAt(2026, 3, 31, 22, 0), 31*24 - 1},
		{"october_paris_31_days_and_an_hour", paris, Month, at(paris, 2026, 10, 31, 23, 0),
			utcAt(2026, 9, 30, 22, 0), utcAt(2026, 10, 31, 23, 0), 31*24 + 1},
		// Go's ZoneBounds reports an end before the instant in the last
		// UTC day of a leap year a TZ rule covers (Go issue 81583);
		// Warsaw's 1st of January 2041 starts in that day of 2040.
		{"warsaw_new_year_after_leap_year_tz_rule", load(t, "Europe/Warsaw"), Day, at(load(t, "Europe/Warsaw"), 2041, 1, 1, 12, 0),
			utcAt(2040, 12, 31, 23, 0), utcAt(2041, 1, 1, 23, 0), 24},
		{"warsaw_last_day_of_leap_year", load(t, "Europe/Warsaw"), Day, utcAt(2040, 12, 31, 12, 0),
			utcAt(2040, 12, 30, 23, 0), utcAt(2040, 12, 31, 23, 0), 24},
		{"before_1970", utc, Day, -1, utcAt(1969, 12, 31, 0, 0), 0, 24},
		{"fixed_zone", time.FixedZone("X", -(9*3600 + 30*60)), Day, utcAt(2026, 1, 1, 9, 29),
			utcAt(2025, 12, 31, 9, 30), utcAt(2026, 1, 1, 9, 30), 24},
		{"fixed_zone_beyond_any_tz_offset", time.FixedZone("far", 40*3600), Day, utcAt(2026, 1, 1, 12, 0),
			utcAt(2026, 1, 1, 8, 0), utcAt(2026, 1, 2, 8, 0), 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := Window(tt.ms, tt.p, tt.loc)
			if start != tt.start || end != tt.end {
				t.Errorf("Window(%v, %v, %v) = [%v, %v), want [%v, %v)", time.UnixMilli(tt.ms).UTC(), tt.p, tt.loc,
					time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC(), time.UnixMilli(tt.start).UTC(), time.UnixMilli(tt.end).UTC())
			}
			unit := h
			if tt.loc == lordHowe {
				unit = h / 60
			}
			if got := (end - start) / unit; got != tt.wantLen || (end-start)%unit != 0 {
				t.Errorf("window lasts %v, want %d×%v", time.Duration(end-start)*time.Millisecond, tt.wantLen, time.Duration(unit)*time.Millisecond)
			}
			s := NewCache(tt.p, tt.loc)
			for range 2 { // computed, then cached
				if cs, ce := s.Window(tt.ms); cs != start || ce != end {
					t.Errorf("Cache.Window = [%d, %d), want [%d, %d)", cs, ce, start, end)
				}
			}
		})
	}
}

// tzif returns a zone in TZif form (RFC 8536, version 1) with the given
// offsets, in seconds east of UTC: offs[0] before the first transition,
// offs[i+1] from trans[i] on.
func tzif(t *testing.T, name string, trans []int64, offs []int32) *time.Location {
	t.Helper()
	var b []byte
	b = append(b, "TZif"...)
	b = append(b, make([]byte, 16)...)
	for _, n := range []int{0, 0, 0, len(trans), len(offs), 4} {
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	}
	for _, tr := range trans {
		b = binary.BigEndian.AppendUint32(b, uint32(int32(tr)))
	}
	for i := range trans {
		b = append(b, byte(i+1))
	}
	for _, o := range offs {
		b = binary.BigEndian.AppendUint32(b, uint32(o))
		b = append(b, 0, 0) // not DST, designation "ZZZ"
	}
	b = append(b, "ZZZ\x00"...)
	loc, err := time.LoadLocationFromTZData(name, b)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// TestWindowUnusualChanges covers clock changes no zone made in
// 1970-2100 that a zone may yet make, in zones built for the test.
func TestWindowUnusualChanges(t *testing.T) {
	t.Parallel()
	utc := func(y int, m time.Month, d, h, min int) int64 {
		return time.Date(y, m, d, h, min, 0, 0, time.UTC).Unix()
	}
	ms := func(s int64) int64 { return s * 1000 }
	// Falls back from 00:30 to 23:30 on the 10th of May 2026 (+1 to 0):
	// the 10th begins at its first midnight, and the half hour that reads
	// the 9th again belongs to the 10th's window.
	across := tzif(t, "Test/Across", []int64{utc(2026, 5, 9, 23, 30)}, []int32{3600, 0})
	// Falls back from 01:00 to 00:00: midnight happens twice, the day
	// begins at the first.
	twice := tzif(t, "Test/Twice", []int64{utc(2026, 5, 10, 0, 0)}, []int32{3600, 0})
	// Springs forward by two days: the 11th and 12th never happen.
	skip := tzif(t, "Test/Skip", []int64{utc(2026, 5, 10, 12, 0)}, []int32{0, 48 * 3600})
	// Falls back by a whole day at noon: the 10th is lived twice.
	again := tzif(t, "Test/Again", []int64{utc(2026, 5, 10, 12, 0)}, []int32{12 * 3600, -12 * 3600})
	tests := []struct {
		name       string
		loc        *time.Location
		at         int64 // instant, Unix seconds
		start, end int64
	}{
		{"across_just_before_change", across, utc(2026, 5, 9, 23, 29), utc(2026, 5, 9, 23, 0), utc(2026, 5, 10, 24, 0)},
		{"across_reads_9th_after_change", across, utc(2026, 5, 9, 23, 45), utc(2026, 5, 9, 23, 0), utc(2026, 5, 10, 24, 0)},
		{"across_9th_ends_at_first_midnight", across, utc(2026, 5, 9, 22, 59), utc(2026, 5, 8, 23, 0), utc(2026, 5, 9, 23, 0)},
		{"twice_first_midnight", twice, utc(2026, 5, 9, 23, 0), utc(2026, 5, 9, 23, 0), utc(2026, 5, 11, 0, 0)},
		{"twice_second_midnight", twice, utc(2026, 5, 10, 0, 0), utc(2026, 5, 9, 23, 0), utc(2026, 5, 11, 0, 0)},
		{"skip_10th_runs_to_13th", skip, utc(2026, 5, 10, 11, 0), utc(2026, 5, 10, 0, 0), utc(2026, 5, 10, 12, 0)},
		{"skip_13th_starts_at_change", skip, utc(2026, 5, 10, 12, 0), utc(2026, 5, 10, 12, 0), utc(2026, 5, 11, 0, 0)},
		{"again_10th_lasts_48h", again, utc(2026, 5, 10, 13, 0), utc(2026, 5, 9, 12, 0), utc(2026, 5, 11, 12, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, end := Window(ms(tt.at), Day, tt.loc)
			if start != ms(tt.start) || end != ms(tt.end) {
				t.Errorf("Window(%v) = [%v, %v), want [%v, %v)", time.Unix(tt.at, 0).UTC(),
					time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC(), time.Unix(tt.start, 0).UTC(), time.Unix(tt.end, 0).UTC())
			}
		})
	}
}

func TestCacheFollowsTheClock(t *testing.T) {
	t.Parallel()
	paris := load(t, "Europe/Paris")
	day := func(d int) int64 { return at(paris, 2026, 7, d, 0, 0) }
	c := NewCache(Day, paris)
	kept := func() Span { return *c.latest.Load() }
	c.Window(day(31))
	// A read of the day before answers it and keeps the cache.
	if s, e := c.Window(day(31) - 1); s != day(30) || e != day(31) {
		t.Fatalf("the day before: [%v, %v)", time.UnixMilli(s), time.UnixMilli(e))
	}
	if got := kept(); got != (Span{day(30), day(31), at(paris, 2026, 8, 1, 0, 0), at(paris, 2026, 8, 2, 0, 0)}) {
		t.Fatalf("after a read of the day before, the cache holds %+v", got)
	}
	// The next day moves it on by one.
	c.Window(at(paris, 2026, 8, 1, 0, 0))
	if got := kept(); got != (Span{day(31), at(paris, 2026, 8, 1, 0, 0), at(paris, 2026, 8, 2, 0, 0), at(paris, 2026, 8, 3, 0, 0)}) {
		t.Fatalf("after a read of the next day, the cache holds %+v", got)
	}
	// A clock stepped a month ahead, then back: the cache follows both
	// ways, so a corrected clock is served from it again.
	c.Window(at(paris, 2026, 9, 15, 12, 0))
	if got := kept().Start; got != at(paris, 2026, 9, 15, 0, 0) {
		t.Fatalf("a month ahead: the cache holds the day from %v", time.UnixMilli(got))
	}
	c.Window(at(paris, 2026, 8, 1, 12, 0))
	if got := kept().Start; got != at(paris, 2026, 8, 1, 0, 0) {
		t.Fatalf("back: the cache holds the day from %v", time.UnixMilli(got))
	}
	if sp := c.Around(day(31) + 1); sp != (Span{day(30), day(31), at(paris, 2026, 8, 1, 0, 0), at(paris, 2026, 8, 2, 0, 0)}) {
		t.Fatalf("Around the day before = %+v", sp)
	}
}

// FuzzWindow checks, at any instant in any of a few zones, that the
// window holds the instant, starts at the first instant whose wall clock
// reads its date (midnight, or the change that skipped it) and ends where
// the next window starts.
func FuzzWindow(f *testing.F) {
	zones := []string{"UTC", "Europe/Paris", "America/Sao_Paulo", "Pacific/Apia", "Australia/Lord_Howe", "Asia/Kathmandu", "America/St_Johns"}
	locs := make([]*time.Location, len(zones))
	for i, z := range zones {
		locs[i] = load(f, z)
	}
	f.Add(int64(0), uint8(0), uint8(0))
	f.Add(time.Date(2011, 12, 30, 12, 0, 0, 0, time.UTC).UnixMilli(), uint8(3), uint8(0))
	f.Add(time.Date(2018, 11, 4, 3, 0, 0, 0, time.UTC).UnixMilli(), uint8(2), uint8(1))
	f.Add(int64(-1), uint8(1), uint8(2))
	f.Fuzz(func(t *testing.T, ms int64, zone, period uint8) {
		ms %= 1 << 42 // ±139 years around 1970
		loc := locs[int(zone)%len(locs)]
		p := Period(period%3 + 1)
		start, end := Window(ms, p, loc)
		if ms < start || ms >= end {
			t.Fatalf("Window(%d, %v, %v) = [%d, %d) does not hold it", ms, p, loc, start, end)
		}
		checkStart(t, start, p, loc)
		if s, _ := Window(end, p, loc); s != end {
			t.Fatalf("window [%d, %d) in %v: the next starts at %d", start, end, loc, s)
		}
		if s, e := Window(start, p, loc); s != start || e != end {
			t.Fatalf("Window(start) = [%d, %d), want [%d, %d)", s, e, start, end)
		}
	})
}

// checkStart checks that start is the first instant whose wall clock in
// loc reads its date at 00:00 or later (checked by the instant a
// millisecond before), that the date is the first of its period, and
// that a start not at midnight on the wall is a change of offset.
func checkStart(t *testing.T, start int64, p Period, loc *time.Location) {
	t.Helper()
	w := time.UnixMilli(start).In(loc)
	y, m, d := w.Date()
	if yy, mm, dd := first(w, p); yy != y || mm != m || dd != d {
		t.Fatalf("start %v in %v: not the first day of a %v", w, loc, p)
	}
	before := time.UnixMilli(start - 1).In(loc)
	if by, bm, bd := before.Date(); time.Date(by, bm, bd, 0, 0, 0, 0, time.UTC).Compare(time.Date(y, m, d, 0, 0, 0, 0, time.UTC)) >= 0 {
		t.Fatalf("start %v in %v: the instant before reads %v, not an earlier date", w, loc, before)
	}
	if hh, mi, ss := w.Clock(); hh != 0 || mi != 0 || ss != 0 || w.Nanosecond() != 0 {
		if zs, _ := w.ZoneBounds(); !zs.Equal(w) {
			t.Fatalf("start %v in %v is neither midnight nor a change of offset", w, loc)
		}
	}
}

// TestCacheConcurrent reads one cache from many goroutines across a
// boundary, for the race detector: every answer holds its instant.
func TestCacheConcurrent(t *testing.T) {
	t.Parallel()
	paris := load(t, "Europe/Paris")
	c := NewCache(Day, paris)
	midnight := at(paris, 2026, 10, 25, 0, 0)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range int64(1000) {
				ms := midnight - 500 + (i*7+int64(g)*13)%1000
				if s, e := c.Window(ms); ms < s || ms >= e {
					t.Errorf("Window(%d) = [%d, %d)", ms, s, e)
					return
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}

// BenchmarkWindow is the cost of a window's bounds computed afresh (as
// at each boundary) and from the cache (every other decision).
func BenchmarkWindow(b *testing.B) {
	paris := load(b, "Europe/Paris")
	ms := at(paris, 2026, 7, 31, 12, 0)
	for _, p := range []Period{Day, Week, Month} {
		b.Run(p.String()+"/computed", func(b *testing.B) {
			for b.Loop() {
				Window(ms, p, paris)
			}
		})
		b.Run(p.String()+"/cached", func(b *testing.B) {
			c := NewCache(p, paris)
			for b.Loop() {
				c.Window(ms)
			}
		})
	}
}
