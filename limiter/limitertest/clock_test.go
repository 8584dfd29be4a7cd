package limitertest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

var _ limiter.Clock = (*limitertest.Clock)(nil)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	c := limitertest.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("New(%v).Now() = %v, want %v", t0, got, t0)
	}
	c.Advance(90 * time.Second)
	if got, want := c.Now(), t0.Add(90*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(90s): got %v, want %v", got, want)
	}
	c.Advance(-time.Minute)
	if got, want := c.Now(), t0.Add(30*time.Second); !got.Equal(want) {
		t.Fatalf("after Advance(-1m): got %v, want %v", got, want)
	}
	c.Set(t0.Add(-time.Hour))
	if got, want := c.Now(), t0.Add(-time.Hour); !got.Equal(want) {
		t.Fatalf("after Set: got %v, want %v", got, want)
	}
	var zero limitertest.Clock
	if got := zero.Now(); !got.IsZero() {
		t.Fatalf("zero Clock reads %v, want the zero time", got)
	}
}

// TestClockConcurrentUse runs under -race: readers and movers at once.
func TestClockConcurrentUse(t *testing.T) {
	c := limitertest.New(time.Unix(0, 0))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				c.Advance(time.Millisecond)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	if got, want := c.Now(), time.Unix(4, 0); !got.Equal(want) {
		t.Fatalf("after 4000 Advance(1ms): got %v, want %v", got, want)
	}
}
