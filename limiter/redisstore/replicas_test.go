package redisstore

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// fire sends n concurrent Allow calls spread over the limiters and returns
// how many were admitted; any error fails the test.
func fire(t *testing.T, ls []*limiter.Limiter, key string, n int) int64 {
	t.Helper()
	var (
		admitted atomic.Int64
		wg       sync.WaitGroup
		errs     = make(chan error, n)
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d, err := ls[i%len(ls)].Allow(context.Background(), key, 1)
			if err != nil {
				errs <- err
				return
			}
			if d.Allowed {
				admitted.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Allow: %v", err)
	}
	return admitted.Load()
}

// TestReplicasShareOneLimit runs four replicas (each its own client, store
// and limiter) firing 1,000 concurrent calls at one key: exactly the limit
// is admitted, round after round.
func TestReplicasShareOneLimit(t *testing.T) {
	const limit, calls, rounds = 137, 1000, 3
	for _, tc := range []struct {
		name  string
		opts  []Option
		clock clockSource
	}{
		{"batch_app_clock", []Option{withPath(pathBatch)}, appClock},
		{"plain_app_clock", []Option{withPath(pathPlain)}, appClock},
		{"batch_server_clock", []Option{withPath(pathBatch), withClockSource(serverClock)}, serverClock},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := limiter.MustPolicy("replicas", limiter.PerHour(limit))
			prefix := testPrefix(t)
			clk := limitertest.New(t0)
			var ls []*limiter.Limiter
			for range 4 {
				c := redistest.Client(t, redistest.SharedAddr)
				// A cold pool dialling 250 connections under -race needs
				// more than the default 100ms; the timeout has its own test.
				s, err := New(c, append([]Option{WithPrefix(prefix), WithTimeout(5 * time.Second)}, tc.opts...)...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				ls = append(ls, newLimiter(t, p, s, clk))
			}
			for round := range rounds {
				key := "client-" + string(rune('a'+round))
				if got := fire(t, ls, key, calls); got != limit {
					t.Fatalf("round %d: admitted %d of %d, want exactly %d", round, got, calls, limit)
				}
				clk.Advance(time.Minute)
			}
		})
	}
}

// TestLargestBatch decides batches of maxBatchSize requests of four
// windows each (4,096 keys in one script call): no error, every window
// charged.
func TestLargestBatch(t *testing.T) {
	p := limiter.MustPolicy("big", limiter.Rate{Limit: 5, Window: 250 * time.Millisecond},
		limiter.PerSecond(6), limiter.PerMinute(7), limiter.PerHour(8))
	s := newStore(t, sharedClient(t), withBatching(maxBatchSize, 1))
	l := newLimiter(t, p, s, limitertest.New(t0))
	const calls = 3 * maxBatchSize
	var (
		wg   sync.WaitGroup
		bad  atomic.Int64
		seen atomic.Int64
	)
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := l.Allow(context.Background(), "k"+strconv.Itoa(i), 1)
			if err != nil || !d.Allowed || d.Remaining != 4 {
				bad.Add(1)
				if bad.Load() == 1 {
					t.Errorf("call %d: %+v, %v", i, d, err)
				}
			}
			seen.Add(1)
		}()
	}
	wg.Wait()
	if bad.Load() != 0 || seen.Load() != calls {
		t.Fatalf("%d of %d calls went wrong", bad.Load(), seen.Load())
	}
	if st := s.Stats(); st.RoundTrips >= calls/4 {
		t.Fatalf("%d round trips for %d calls: batches did not form", st.RoundTrips, calls)
	}
}
