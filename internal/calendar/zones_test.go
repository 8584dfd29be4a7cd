package calendar

import (
	"archive/zip"
	"crypto/sha256"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A zone is one zone of the tz database, loaded from Go's own copy
// ($GOROOT/lib/time/zoneinfo.zip, the data time/tzdata embeds), so the
// test sees the same zones on every machine, whatever the system has.
type zone struct {
	names []string // every name with this data (links: US/Eastern, America/New_York)
	loc   *time.Location
}

// tzZones loads every zone of Go's tz database, one per distinct data:
// links to the same data behave alike, so each is checked once.
func tzZones(t *testing.T) []zone {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	zr, err := zip.OpenReader(filepath.Join(strings.TrimSpace(string(out)), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	byData := map[[32]byte]int{}
	var zones []zone
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if i, ok := byData[sum]; ok {
			zones[i].names = append(zones[i].names, f.Name)
			continue
		}
		loc, err := time.LoadLocationFromTZData(f.Name, b)
		if err != nil {
			t.Fatalf("zone %s: %v", f.Name, err)
		}
		byData[sum] = len(zones)
		zones = append(zones, zone{names: []string{f.Name}, loc: loc})
	}
	if len(zones) < 300 {
		t.Fatalf("%d distinct zones in Go's tz database, want several hundred", len(zones))
	}
	return zones
}

// A segment is a span of constant offset: [from, to) in Unix seconds.
type segment struct{ from, to, off int64 }

// segments returns loc's spans of constant offset that meet [lo, hi),
// read from Time.ZoneBounds and Time.Zone: the zone's own account of its
// changes, apart from the arithmetic under test. Spans of one offset that
// ZoneBounds reports apart (it cuts at the end of each year a TZ rule
// covers) are joined, so every boundary is a change of offset.
func segments(loc *time.Location, lo, hi int64) []segment {
	var segs []segment
	for t := lo; t < hi; {
		at := time.Unix(t, 0).In(loc)
		_, off := at.Zone()
		_, to := at.ZoneBounds()
		end := hi + 1
		if !to.IsZero() {
			end = spanEndAfter(t, to.Unix())
		}
		if n := len(segs); n > 0 && segs[n-1].off == int64(off) {
			segs[n-1].to = end
		} else {
			segs = append(segs, segment{from: t, to: end, off: int64(off)})
		}
		t = end
	}
	return segs
}

// TestEveryZoneEveryDay walks the windows of every zone from 1970 to 2100,
// day by day, week by week and month by month, and checks that they are
// contiguous (each starts where the last ended), never empty (so never
// overlapping), and each starts at the first instant whose wall clock
// reads its date: local midnight, or where midnight does not exist, the
// change of offset that skipped it. The wall clock is read from the
// zone's spans of constant offset, computed apart (segments), so the
// check is integer arithmetic and cheap enough for every day of every
// zone under the race detector. Transitions are also probed from both
// sides with Window itself, and the week and month starts are day
// starts. Zones are checked in parallel, one per core.
//
// 17 million windows: 2.3 s without the race detector, 14 s with it, on
// two cores shared with other work, 26 s beside the other internal
// packages' tests (as long as internal/flood's, less than internal/soak's).
func TestEveryZoneEveryDay(t *testing.T) {
	t.Parallel()
	zones := tzZones(t)
	lo := time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC)
	// Zones whose offsets agree over the range (many differ only in
	// their local mean time before 1970) have the same windows there:
	// each is walked once.
	from, to := lo.AddDate(0, 0, -40).Unix(), hi.AddDate(0, 0, 40).Unix()
	type walk struct {
		zone
		segs []segment
	}
	var walks []walk
	seen := map[string]int{}
	for _, z := range zones {
		segs := segments(z.loc, from, to)
		key := fmt.Sprint(segs)
		if i, ok := seen[key]; ok {
			walks[i].names = append(walks[i].names, z.names...)
			continue
		}
		seen[key] = len(walks)
		walks = append(walks, walk{z, segs})
	}
	var (
		mu    sync.Mutex
		total int
	)
	work := make(chan walk)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for w := range work {
				n := checkZone(t, w.zone, w.segs, lo, hi)
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	for _, w := range walks {
		work <- w
	}
	close(work)
	wg.Wait()
	names := 0
	for _, z := range zones {
		names += len(z.names)
	}
	t.Logf("%d zone names, %d distinct zones, %d with distinct offsets over the range; %d windows checked",
		names, len(zones), len(walks), total)
}

// checkZone checks z's windows of every period that start in [lo, hi)
// and returns how many it checked.
func checkZone(t *testing.T, z zone, segs []segment, lo, hi time.Time) int {
	name := z.names[0]
	n := 0
	var days []int64 // every day's start, in order
	for _, p := range []Period{Day, Week, Month} {
		seg, di := 0, 0
		wallAt := func(ms int64) int64 { // wall clock, in seconds, at ms
			s := floorDiv(ms, 1000)
			for segs[seg].to <= s {
				seg++
			}
			for segs[seg].from > s {
				seg--
			}
			return s + segs[seg].off
		}
		start, end := Window(lo.UnixMilli(), p, z.loc)
		for start < hi.UnixMilli() {
			if end <= start {
				t.Errorf("%s %v: empty or reversed window [%v, %v)", name, p, ms(start), ms(end))
				return n
			}
			// The date the window is for: the wall date at its start.
			wall := wallAt(start)
			at := segs[seg]
			day := floorDiv(wall, 86400) * 86400
			date := time.Unix(day, 0).UTC()
			if y, m, d := first(date, p); time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix() != day {
				t.Errorf("%s %v: window [%v, %v) starts on %v, not the first day of its %v", name, p, ms(start), ms(end), date, p)
				return n
			}
			// No earlier instant reads the date: the instant before,
			// and the last instant of each span of the three days
			// before (a clock that fell back may have read it there).
			if wallAt(start-1) >= day {
				t.Errorf("%s %v: the instant before %v already reads %v", name, p, ms(start), date)
				return n
			}
			for k := seg - 1; k >= 0 && segs[k].to > start/1000-3*86400; k-- {
				if segs[k].to-1+segs[k].off >= day {
					t.Errorf("%s %v: %v reads %v before its window's start %v", name, p, ms(segs[k].to*1000-1), date, ms(start))
					return n
				}
			}
			if wall != day && at.from*1000 != start {
				t.Errorf("%s %v: %v (wall %v) is neither midnight nor a change of offset", name, p, ms(start), time.Unix(wall, 0).UTC())
				return n
			}
			if p == Day {
				days = append(days, start)
			} else if start >= days[0] {
				for days[di] < start {
					di++
				}
				if days[di] != start {
					t.Errorf("%s %v: %v starts no day", name, p, ms(start))
					return n
				}
			}
			s2, e2 := Window(end, p, z.loc)
			if s2 != end {
				t.Errorf("%s %v: window [%v, %v) is followed by one starting %v", name, p, ms(start), ms(end), ms(s2))
				return n
			}
			start, end = s2, e2
			n++
		}
	}
	// Every change of offset, from both sides: Window there agrees with
	// the walk above.
	for _, s := range segs {
		if s.from < lo.Unix() || s.from >= hi.Unix() {
			continue
		}
		for _, at := range []int64{s.from*1000 - 1, s.from * 1000} {
			start, end := Window(at, Day, z.loc)
			i, found := slices.BinarySearch(days, start)
			if !found || at < start || at >= end || i+1 < len(days) && days[i+1] != end {
				t.Errorf("%s: Window(%v) = [%v, %v), not a day of the walk holding it", name, ms(at), ms(start), ms(end))
			}
		}
	}
	return n
}

func ms(v int64) time.Time { return time.UnixMilli(v).UTC() }
