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
