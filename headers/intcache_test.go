package headers

import (
	"math"
	"strconv"
	"sync"
	"testing"
)

func TestIntCacheFormats(t *testing.T) {
	t.Parallel()
	var c intCache
	values := []int64{0, 1, -1, 9, 10, 100, 1796046240, math.MaxInt64, math.MinInt64}
	for i := range int64(1000) {
		values = append(values, i*7919) // many values share slots
	}
	for range 2 { // once to fill, once to hit or replace
		for _, v := range values {
			if got, want := c.format(v), strconv.FormatInt(v, 10); got != want {
				t.Fatalf("format(%d) = %q, want %q", v, got, want)
			}
		}
	}
}

func TestIntCacheConcurrent(t *testing.T) {
	t.Parallel()
	var c intCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range int64(2000) {
				v := i*int64(g+1) + 1_700_000_000
				if got, want := c.format(v), strconv.FormatInt(v, 10); got != want {
					t.Errorf("format(%d) = %q, want %q", v, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestIntCacheKeepsTwoNumbersOfOneSet: a limit and a window's end that
// fall in one set are both kept once they have been asked for a few
// times in turn, so that a response formats neither. With one slot per
// number they evicted each other on every request.
func TestIntCacheKeepsTwoNumbersOfOneSet(t *testing.T) {
	set := func(v int64) uint64 { return uint64(v) * 0x9E3779B97F4A7C15 >> 60 }
	// The peers' benchmark's limit, and the end of a minute in its set.
	limit := int64(1_000_000_000)
	end := int64(1_796_000_040)
	for set(end) != set(limit) {
		end += 60
	}
	var c intCache
	// The set is full of earlier windows' ends first: a miss then
	// replaces a slot at random.
	for earlier := end - 60; earlier > end-100*60*16; earlier -= 60 {
		if set(earlier) == set(limit) {
			c.format(earlier)
		}
	}
	for range 100 { // each miss settles them with probability 1/2 at least
		c.format(limit)
		c.format(end)
	}
	endForm := strconv.FormatInt(end, 10)
	allocs := testing.AllocsPerRun(100, func() {
		if c.format(limit) != "1000000000" || c.format(end) != endForm {
			t.Fatal("wrong form")
		}
	})
	if allocs != 0 {
		t.Errorf("format(%d) and format(%d) in turn: %v allocations, want 0", limit, end, allocs)
	}
}
