package linearize

import (
	"cmp"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A coverage is what one history exercised, of what bugs hide behind:
// a window that never fills checks no refusal of its own, nor what a
// cache may refuse by; decisions that never meet on a key check no
// lock; a boundary crossed by no key checks no window's turn.
type coverage struct {
	// full and seen count, per rate, the windows (per key) decisions
	// were made in that reached the limit (some decision answered a
	// count at or past it), and all of them.
	full, seen []int
	// decisions counts the decisions answered (Allows, Peeks, Reserves,
	// none failed nor made by WithFailLocal's fallback); overlapping
	// those whose call and return overlap another's on their key, and
	// nearLimit those of them that answered a count within nearLimit of
	// a window's limit.
	decisions, overlapping, nearLimit int
	// crossed counts the boundaries of the shortest rate's windows that
	// some key's decisions came within a clock tick of on both sides.
	crossed int
}

// nearLimit is how close to its limit a window's count is near it: the
// largest cost.
const nearLimit = 3

// coverageOf returns what h exercised.
func coverageOf(h *History) coverage {
	type win struct {
		key  string
		rate int
		id   int64
	}
	type edge struct {
		key string
		at  int64
	}
	n := len(h.Spec.Windows)
	c := coverage{full: make([]int, n), seen: make([]int, n)}
	all := map[win]bool{}
	sides := map[edge][2]bool{}
	byKey := map[string][]Op{}
	short := h.Spec.shortest()
	for _, op := range h.Ops {
		switch op.In.Kind {
		case Allow, Peek, Reserve:
		default:
			continue
		}
		if op.Out.Unknown || op.Out.Local || len(op.Out.Used) != n {
			continue
		}
		c.decisions++
		byKey[op.In.Key] = append(byKey[op.In.Key], op)
		for i, w := range h.Spec.Windows {
			k := win{op.In.Key, i, floorDiv(op.Out.At, w)}
			all[k] = all[k] || op.Out.Used[i] >= h.Spec.Limits[i]
		}
		b := floorDiv(op.Out.At+short/2, short) * short // the nearest boundary
		if d := op.Out.At - b; d >= -clockTickMs && d < clockTickMs {
			e := edge{op.In.Key, b}
			s := sides[e]
			if d < 0 {
				s[0] = true // before it
			} else {
				s[1] = true // from it on
			}
			sides[e] = s
		}
	}
	for k, f := range all {
		c.seen[k.rate]++
		if f {
			c.full[k.rate]++
		}
	}
	for _, s := range sides {
		if s[0] && s[1] {
			c.crossed++
		}
	}
	for _, ops := range byKey {
		for _, op := range overlapping(ops) {
			c.overlapping++
			if h.Spec.nearLimit(op.Out.Used) {
				c.nearLimit++
			}
		}
	}
	return c
}

// nearLimit reports whether some window's count in used is within
// nearLimit of its limit, or past it.
func (sp *Spec) nearLimit(used []int64) bool {
	for i, u := range used {
		if u >= sp.Limits[i]-nearLimit {
			return true
		}
	}
	return false
}

// overlapping returns the operations of ops (one key's) whose call and
// return overlap another's.
func overlapping(ops []Op) []Op {
	slices.SortFunc(ops, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	met := make([]bool, len(ops))
	last := -1 // the operation that returns last of those called so far
	for i, op := range ops {
		if last >= 0 && op.Call < ops[last].Return {
			met[i], met[last] = true, true
		}
		if last < 0 || op.Return > ops[last].Return {
			last = i
		}
	}
	var out []Op
	for i, m := range met {
		if m {
			out = append(out, ops[i])
		}
	}
	return out
}

// String returns c as a person reads it: "windows at their limit:
// 1000 ms 12 of 14, 4000 ms 3 of 6; decisions overlapping another on
// their key 612 of 4000 (15.3%), 120 near a limit; 34 boundaries
// crossed".
func (c coverage) String(sp Spec) string {
	var parts []string
	for i, w := range sp.Windows {
		parts = append(parts, fmt.Sprintf("%d ms %d of %d", w, c.full[i], c.seen[i]))
	}
	return fmt.Sprintf("windows at their limit: %s; decisions overlapping another on their key %d of %d (%.1f%%), %d near a limit; %d boundaries crossed",
		strings.Join(parts, ", "), c.overlapping, c.decisions, c.overlap()*100, c.nearLimit, c.crossed)
}

// overlap returns the share of decisions that overlap another on their
// key.
func (c coverage) overlap() float64 {
	if c.decisions == 0 {
		return 0
	}
	return float64(c.overlapping) / float64(c.decisions)
}

func TestCoverage(t *testing.T) {
	sp := redisSpec() // 3 a second, 5 every 4 s
	h := &History{Spec: sp, Ops: seq(
		allow(0, 100, 3, true, 3, 3),
		allow(0, 1100, 2, true, 2, 5),
		allow(0, 2100, 1, false, 0, 5),
		failed(allow(0, 3100, 3, true)),
		peek(0, 4100, 3, true, 3, 3), // a peek's answer counts its cost: the short window reads full
	)}
	c := coverageOf(h)
	if want := []int{2, 1}; !slices.Equal(c.full, want) {
		t.Errorf("full %v, want %v", c.full, want)
	}
	if want := []int{4, 2}; !slices.Equal(c.seen, want) {
		t.Errorf("seen %v, want %v", c.seen, want)
	}
	if c.decisions != 4 || c.overlapping != 0 || c.crossed != 0 {
		t.Errorf("sequential: got %d decisions, %d overlapping, %d crossed; want 4, 0, 0", c.decisions, c.overlapping, c.crossed)
	}

	// At 10 a second and 30 every 4 s: three decisions around the
	// boundary at 2000 (within a clock tick either side), the first two
	// overlapping, the third within the second, two of them near a
	// limit; one on another key overlaps none of its own.
	sp.Limits = []int64{10, 30}
	ops := []Op{
		allow(0, 1990, 1, true, 2, 2),
		allow(1, 2000, 1, true, 7, 8),
		allow(2, 2010, 1, false, 1, 27),
		allow(0, 5000, 1, true, 10, 10),
	}
	for i, span := range [][2]int64{{0, 10}, {5, 30}, {20, 25}, {0, 100}} {
		ops[i].Call, ops[i].Return, ops[i].Client = span[0], span[1], i
	}
	ops[3].In.Key = "other"
	c = coverageOf(&History{Spec: sp, Ops: ops})
	if c.overlapping != 3 || c.nearLimit != 2 || c.crossed != 1 {
		t.Errorf("got %d overlapping, %d near a limit, %d crossed; want 3, 2, 1", c.overlapping, c.nearLimit, c.crossed)
	}
}

// A floor is the least coverage each history of a configuration must
// show, under which the history fails: a figure left zero is not
// enforced.
type floor struct {
	full      []int   // windows at their limit, per rate
	overlap   float64 // the share of decisions that overlap another on their key
	nearLimit int     // decisions that overlap another near a limit
	crossed   int     // boundaries crossed
	// raced: the overlaps are held under the race detector only.
	// Without it the memory store decides in about a microsecond, and
	// the workers seldom meet on a busy machine: 0 to 0.3% of the
	// memory configuration's decisions overlapped another beside two
	// busy loops, 2.5 to 5.0% alone (make jepsen runs without -race).
	raced bool
}

// floors are the least coverage of each configuration's histories
// (none: not enforced), about half the least of 8 short runs under
// -race on the shared 2-core box at load averages of 3.6 to 9.1, given
// beside each (windows at their limit per rate, decisions overlapping
// another on their key, those near a limit, boundaries crossed); the
// memory configuration's, since its bursts take turns (bursts_test.go),
// of 18 runs alone or beside two busy loops, load averages 1.2 to 3.4
// (its windows and boundaries: of 10 of them); redis-cache-steps', of 7
// runs of it alone (-run 'TestLinearizable/redis-cache-steps/'), load
// averages 2.5 to 2.7.
// The boundaries crossed by the Redis configurations (0 to 21: a clock
// tick of 40 ms, late under load, may fall either side) and the windows
// redis-settles fills (none: its limits are past what it asks) are not
// held.
var floors = map[string]floor{
	"memory":                     {full: []int{60, 3}, overlap: 0.005, nearLimit: 10, crossed: 60, raced: true}, // 132, 7; 0.9%; 23; 120
	"redis":                      {full: []int{6, 1}, overlap: 0.25, nearLimit: 500},                            // 13, 2; 54.7%; 1,164
	"redis-faults":               {full: []int{7, 0}, overlap: 0.25, nearLimit: 200},                            // 14, 0; 57.4%; 468
	"redis-cache":                {full: []int{7, 3}, overlap: 0.10, nearLimit: 150},                            // 15, 6; 20.9%; 305
	"redis-cache-steps":          {full: []int{9, 3}, overlap: 0.07, nearLimit: 220},                            // 18, 6; 15.8%; 446
	"redis-settles":              {overlap: 0.25},                                                               // 50.4%
	"redis-serverclock":          {full: []int{3, 0}, overlap: 0.25, nearLimit: 300},                            // 6, 0; 56.8%; 609
	"redis-faillocal":            {full: []int{9, 0}, overlap: 0.25, nearLimit: 350},                            // 18, 0; 59.1%; 783
	"redis-leases":               {full: []int{3, 3}, overlap: 0.25, nearLimit: 400},                            // 6, 6; 58.3%; 819
	"redis-leases-debt":          {full: []int{3, 2}, overlap: 0.20, nearLimit: 450},                            // 6, 5; 46.9%; 979
	"redis-leases-reset":         {full: []int{4, 4}, overlap: 0.15, nearLimit: 500},                            // 9, 9; 38.2%; 1,106
	"redis-leases-reset-returns": {full: []int{4, 4}, overlap: 0.15, nearLimit: 400},                            // 9, 9; 34.5%; 827
	"redis-leases-serverclock":   {full: []int{4, 4}, overlap: 0.15, nearLimit: 450},                            // 9, 9; 33.8%; 908 (22 runs, 14 under -race)
	"redis-acks":                 {full: []int{9, 0}, overlap: 0.25, nearLimit: 350},                            // 18, 0; 59.9%; 739
	"cluster":                    {full: []int{8, 0}, overlap: 0.25, nearLimit: 250},                            // 17, 0; 56.5%; 547
}

// raceDetector reports whether the test binary was built with -race.
var raceDetector = sync.OnceValue(func() bool {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-race" {
				return s.Value == "true"
			}
		}
	}
	return false
})

// short returns what c falls short of f by, as a person reads it.
func (f floor) short(c coverage, sp Spec) []string {
	var out []string
	for i, n := range f.full {
		if c.full[i] < n {
			out = append(out, fmt.Sprintf("%d windows of %d ms at their limit, want at least %d", c.full[i], sp.Windows[i], n))
		}
	}
	if f.raced && !raceDetector() {
		f.overlap, f.nearLimit = 0, 0
	}
	if c.overlap() < f.overlap {
		out = append(out, fmt.Sprintf("%.1f%% of decisions overlapping another on their key, want at least %.1f%%", c.overlap()*100, f.overlap*100))
	}
	if c.nearLimit < f.nearLimit {
		out = append(out, fmt.Sprintf("%d decisions overlapping another near a limit, want at least %d", c.nearLimit, f.nearLimit))
	}
	if c.crossed < f.crossed {
		out = append(out, fmt.Sprintf("%d boundaries crossed, want at least %d", c.crossed, f.crossed))
	}
	return out
}

func TestFloorShort(t *testing.T) {
	sp := Spec{Windows: []int64{1000, 4000}, Limits: []int64{10, 30}}
	c := coverage{full: []int{5, 1}, seen: []int{9, 3}, decisions: 100, overlapping: 10, nearLimit: 4, crossed: 7}
	raced := 0 // figures short of a floor held under the race detector only
	if raceDetector() {
		raced = 2
	}
	for _, tc := range []struct {
		name string
		f    floor
		want int
	}{
		{"none", floor{}, 0},
		{"met_exactly", floor{full: []int{5, 1}, overlap: 0.1, nearLimit: 4, crossed: 7}, 0},
		{"one_window_short", floor{full: []int{5, 2}}, 1},
		{"every_figure_short", floor{full: []int{6, 2}, overlap: 0.11, nearLimit: 5, crossed: 8}, 5},
		{"overlaps_held_under_the_race_detector_only", floor{overlap: 0.11, nearLimit: 5, raced: true}, raced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.f.short(c, sp); len(got) != tc.want {
				t.Fatalf("coverage %+v, floor %+v: short by %q, want %d figures", c, tc.f, got, tc.want)
			}
		})
	}
}
