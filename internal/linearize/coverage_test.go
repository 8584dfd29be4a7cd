package linearize

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// fullWindows returns, for each rate of h's policy, how many of the
// windows its decisions were made in (per key) reached the limit (some
// decision answered a count at or past it), and how many there were:
// a window that never fills checks no refusal of its own, nor what a
// cache may refuse by.
func fullWindows(h *History) (full, seen []int) {
	type win struct {
		key  string
		rate int
		id   int64
	}
	n := len(h.Spec.Windows)
	all := map[win]bool{}
	for _, op := range h.Ops {
		switch op.In.Kind {
		case Allow, Peek, Reserve:
		default:
			continue
		}
		if op.Out.Unknown || op.Out.Local || len(op.Out.Used) != n {
			continue
		}
		for i, w := range h.Spec.Windows {
			k := win{op.In.Key, i, floorDiv(op.Out.At, w)}
			all[k] = all[k] || op.Out.Used[i] >= h.Spec.Limits[i]
		}
	}
	full, seen = make([]int, n), make([]int, n)
	for k, f := range all {
		seen[k.rate]++
		if f {
			full[k.rate]++
		}
	}
	return full, seen
}

// describeFull returns fullWindows as a person reads it: "windows at
// their limit: 1000 ms 12 of 14, 4000 ms 3 of 6".
func describeFull(h *History) string {
	full, seen := fullWindows(h)
	var parts []string
	for i, w := range h.Spec.Windows {
		parts = append(parts, fmt.Sprintf("%d ms %d of %d", w, full[i], seen[i]))
	}
	return "windows at their limit: " + strings.Join(parts, ", ")
}

func TestFullWindows(t *testing.T) {
	sp := redisSpec() // 3 a second, 5 every 4 s
	h := &History{Spec: sp, Ops: seq(
		allow(0, 100, 3, true, 3, 3),
		allow(0, 1100, 2, true, 2, 5),
		allow(0, 2100, 1, false, 0, 5),
		failed(allow(0, 3100, 3, true)),
		peek(0, 4100, 3, true, 3, 3), // a peek's answer counts its cost: the short window reads full
	)}
	full, seen := fullWindows(h)
	if want := []int{2, 1}; !slices.Equal(full, want) {
		t.Errorf("full %v, want %v", full, want)
	}
	if want := []int{4, 2}; !slices.Equal(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
}
