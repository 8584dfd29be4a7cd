package limiter

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

var noon = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// newTestLimiter returns a limiter on its own in-memory store, driven by a
// fake clock set to start.
func newTestLimiter(t testing.TB, p *Policy, start time.Time) (*Limiter, *limitertest.Clock, *MemoryStore) {
	t.Helper()
	clk := limitertest.New(start)
	st, err := NewMemoryStore(WithSweepInterval(0), WithShards(16))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	l, err := New(p, WithStore(st), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return l, clk, st
}

func allow(t testing.TB, l *Limiter, key string, cost int64) Decision {
	t.Helper()
	d, err := l.Allow(context.Background(), key, cost)
	if err != nil {
		t.Fatalf("Allow(%q, %d): %v", key, cost, err)
	}
	return d
}

func tenPerMinute() *Policy { return MustPolicy("t", PerMinute(10)) }

// The limiter's invariants, one test each.

func TestAllowFirstTenAdmittedRemainingFalls(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t, tenPerMinute(), noon)
	for i := int64(1); i <= 10; i++ {
		d := allow(t, l, "user-1", 1)
		if !d.Allowed || d.Remaining != 10-i || d.Limit != 10 || d.RetryAfter != 0 {
			t.Fatalf("request %d: %+v, want allowed with remaining %d", i, d, 10-i)
		}
	}
}

func TestAllowEleventhDeniedWithNilError(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t, tenPerMinute(), noon)
	for range 10 {
		allow(t, l, "user-1", 1)
	}
	d, err := l.Allow(context.Background(), "user-1", 1)
	if err != nil || d.Allowed || d.Remaining != 0 {
		t.Fatalf("11th: %+v, %v; want denied, remaining 0, nil error", d, err)
	}
}

func TestAllowKeysAreIsolated(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t, tenPerMinute(), noon)
	for range 11 {
		allow(t, l, "A", 1)
	}
	if d := allow(t, l, "B", 1); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("B after A exhausted: %+v, want allowed with 9 remaining", d)
	}
}

func TestAllowNextWindowAdmits(t *testing.T) {
	t.Parallel()
	l, clk, _ := newTestLimiter(t, tenPerMinute(), noon.Add(45*time.Second))
	for range 11 {
		allow(t, l, "user-1", 1)
	}
	clk.Set(noon.Add(time.Minute)) // exactly the boundary
	if d := allow(t, l, "user-1", 1); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("first request of the next window: %+v, want allowed, 9 remaining", d)
	}
}

func TestAllowRetryMetadataPointsAtAlignedBoundary(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t, tenPerMinute(), noon.Add(30*time.Second))
	for range 10 {
		allow(t, l, "user-1", 1)
	}
	d := allow(t, l, "user-1", 1)
	if d.Allowed {
		t.Fatal("11th request admitted")
	}
	if d.RetryAfter != 30*time.Second {
		t.Errorf("RetryAfter = %v, want 30s", d.RetryAfter)
	}
	if want := noon.Add(time.Minute); !d.ResetAt.Equal(want) {
		t.Errorf("ResetAt = %v, want %v (not 12:01:30)", d.ResetAt.UTC(), want)
	}
}

func TestAllowBoundaryBurstIsTwiceTheLimit(t *testing.T) {
	t.Parallel()
	l, clk, _ := newTestLimiter(t, tenPerMinute(), noon.Add(59*time.Second))
	admitted := 0
	for range 10 {
		if allow(t, l, "user-1", 1).Allowed {
			admitted++
		}
	}
	clk.Advance(time.Second) // 12:01:00, a new window
	for range 10 {
		if allow(t, l, "user-1", 1).Allowed {
			admitted++
		}
	}
	if admitted != 20 {
		t.Fatalf("admitted %d across the boundary, want 20: the fixed window's honest 2x burst", admitted)
	}
}

func TestAllowInvalidCostCreatesNoState(t *testing.T) {
	t.Parallel()
	for _, cost := range []int64{0, -1, math.MinInt64} {
		l, _, st := newTestLimiter(t, tenPerMinute(), noon)
		if _, err := l.Allow(context.Background(), "user-1", cost); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("Allow(cost %d) error = %v, want ErrInvalidCost", cost, err)
		}
		if _, err := l.Peek(context.Background(), "user-1", cost); !errors.Is(err, ErrInvalidCost) {
			t.Errorf("Peek(cost %d) error = %v, want ErrInvalidCost", cost, err)
		}
		if n := st.Stats().Keys; n != 0 {
			t.Errorf("cost %d left %d counters, want 0", cost, n)
		}
	}
}

func TestAllowOversizedCostDeniedWithoutCharge(t *testing.T) {
	t.Parallel()
	l, _, st := newTestLimiter(t, tenPerMinute(), noon)
	d := allow(t, l, "user-1", 11)
	if d.Allowed || d.Remaining != 10 {
		t.Fatalf("cost 11 of 10: %+v, want denied with 10 remaining", d)
	}
	if st.Stats().Keys != 0 {
		t.Fatalf("denied oversized cost created %d counters", st.Stats().Keys)
	}
	if d := allow(t, l, "user-1", 10); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("cost 10 after: %+v, want allowed, 0 remaining", d)
	}
}

func TestAllowCorruptHugeCountCannotOverflowIntoAllow(t *testing.T) {
	t.Parallel()
	p := tenPerMinute()
	l, _, st := newTestLimiter(t, p, noon)
	allow(t, l, "user-1", 1)
	// Corrupt the stored count as a bad write or a bit flip might.
	h := st.hash("user-1", p)
	sh := &st.shards[h&st.mask]
	sh.mu.Lock()
	for i := range sh.tables {
		sh.tables[i].counts.set(h, math.MaxInt64)
	}
	sh.mu.Unlock()
	for _, cost := range []int64{1, 10} {
		if d := allow(t, l, "user-1", cost); d.Allowed || d.Remaining != 0 {
			t.Errorf("cost %d on count MaxInt64: %+v, want denied, 0 remaining", cost, d)
		}
	}
}

func TestAllowCancelledContextCreatesNoState(t *testing.T) {
	t.Parallel()
	l, _, st := newTestLimiter(t, tenPerMinute(), noon)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Allow(ctx, "user-1", 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Allow on cancelled context: %v, want context.Canceled", err)
	}
	if err := l.Reset(ctx, "user-1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reset on cancelled context: %v, want context.Canceled", err)
	}
	if st.Stats().Keys != 0 {
		t.Fatalf("cancelled call created %d counters", st.Stats().Keys)
	}
}

func TestAllowEmptyKeyRefused(t *testing.T) {
	t.Parallel()
	l, _, st := newTestLimiter(t, tenPerMinute(), noon)
	if _, err := l.Allow(context.Background(), "", 1); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Allow(\"\") = %v, want ErrInvalidKey", err)
	}
	if err := l.Reset(context.Background(), ""); !errors.Is(err, ErrInvalidKey) {
		t.Fatalf("Reset(\"\") = %v, want ErrInvalidKey", err)
	}
	if st.Stats().Keys != 0 {
		t.Fatal("empty key created state")
	}
}

// TestTickScenario walks limit 3 per 10 ticks (milliseconds here) tick by
// tick.
func TestTickScenario(t *testing.T) {
	t.Parallel()
	p := MustPolicy("ticks", Rate{Limit: 3, Window: 10 * time.Millisecond})
	l, clk, _ := newTestLimiter(t, p, time.UnixMilli(0))
	for _, tc := range []struct {
		tick int64
		want bool
	}{{0, true}, {1, true}, {2, true}, {3, false}, {9, false}, {10, true}} {
		clk.Set(time.UnixMilli(tc.tick))
		if got := allow(t, l, "k", 1).Allowed; got != tc.want {
			t.Errorf("tick %d: allowed %v, want %v", tc.tick, got, tc.want)
		}
	}
}

func TestLayeredAllOrNothing(t *testing.T) {
	t.Parallel()
	p := MustPolicy("api", PerMinute(7), PerSecond(3))
	l, clk, _ := newTestLimiter(t, p, noon)
	for i := range 3 {
		if d := allow(t, l, "k", 1); !d.Allowed || d.Window != time.Second || d.Remaining != int64(2-i) {
			t.Fatalf("request %d: %+v, want allowed by the 1s window with %d remaining", i+1, d, 2-i)
		}
	}
	d := allow(t, l, "k", 1)
	if d.Allowed || d.Window != time.Second || d.RetryAfter != time.Second {
		t.Fatalf("4th in one second: %+v, want refused by the 1s window, retry 1s", d)
	}
	if ws := d.WindowAt(0); ws.Remaining != 4 {
		t.Fatalf("the refused request charged the minute window: remaining %d, want 4", ws.Remaining)
	}
	clk.Advance(time.Second)
	for range 3 {
		allow(t, l, "k", 1)
	}
	clk.Advance(time.Second)
	allow(t, l, "k", 1) // the minute's 7th
	d = allow(t, l, "k", 1)
	if d.Allowed || d.Window != time.Minute || d.RetryAfter != 58*time.Second {
		t.Fatalf("8th in the minute: %+v, want refused by the minute window, retry 58s", d)
	}
	if ws := d.WindowAt(1); ws.Remaining != 2 {
		t.Fatalf("the refused request charged the second window: remaining %d, want 2", ws.Remaining)
	}
}

func TestPeekChargesNothing(t *testing.T) {
	t.Parallel()
	l, _, st := newTestLimiter(t, tenPerMinute(), noon)
	for range 3 {
		d, err := l.Peek(context.Background(), "k", 1)
		if err != nil || !d.Allowed || d.Remaining != 9 {
			t.Fatalf("Peek: %+v, %v; want allowed, 9 remaining", d, err)
		}
	}
	if st.Stats().Keys != 0 {
		t.Fatal("Peek created state")
	}
	allow(t, l, "k", 10)
	if d, _ := l.Peek(context.Background(), "k", 1); d.Allowed {
		t.Fatal("Peek on an exhausted key said allowed")
	}
}

func TestResetForgetsKey(t *testing.T) {
	t.Parallel()
	l, _, _ := newTestLimiter(t, tenPerMinute(), noon)
	allow(t, l, "k", 10)
	allow(t, l, "other", 10)
	if err := l.Reset(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if d := allow(t, l, "k", 1); !d.Allowed || d.Remaining != 9 {
		t.Fatalf("after Reset: %+v, want a fresh budget", d)
	}
	if d := allow(t, l, "other", 1); d.Allowed {
		t.Fatal("Reset of k reset other too")
	}
}

func TestPoliciesOnOneStoreAreSeparate(t *testing.T) {
	t.Parallel()
	clk := limitertest.New(noon)
	st, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, _ := New(MustPolicy("a", PerMinute(1)), WithStore(st), WithClock(clk))
	b, _ := New(MustPolicy("b", PerMinute(1)), WithStore(st), WithClock(clk))
	allow(t, a, "k", 1)
	if d := allow(t, b, "k", 1); !d.Allowed {
		t.Fatal("policy b inherited policy a's count for the same key")
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	if _, err := New(nil); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("New(nil) = %v, want ErrInvalidPolicy", err)
	}
	if _, err := New(&Policy{}); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("New(zero Policy) = %v, want ErrInvalidPolicy", err)
	}
	options := []struct {
		name string
		opt  Option
	}{
		{"nil_clock", WithClock(nil)},
		{"nil_store", WithStore(nil)},
		// What NewMemoryStore returns beside an error that was dropped.
		{"typed_nil_store", WithStore((*MemoryStore)(nil))},
		{"typed_nil_clock", WithClock((*systemClockPtr)(nil))},
		{"nil_option", nil},
	}
	for _, tt := range options {
		t.Run(tt.name, func(t *testing.T) {
			l, err := New(tenPerMinute(), tt.opt)
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New(%s) = %v, %v; want an error wrapping ErrInvalidOption", tt.name, l, err)
			}
		})
	}
}

// systemClockPtr is a Clock with a pointer receiver, to pass a typed nil.
type systemClockPtr struct{}

func (*systemClockPtr) Now() time.Time { return time.Now() }

func TestClosedLimiter(t *testing.T) {
	t.Parallel()
	l, err := New(tenPerMinute())
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := l.Allow(context.Background(), "k", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Allow after Close = %v, want ErrClosed", err)
	}
	if err := l.Reset(context.Background(), "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset after Close = %v, want ErrClosed", err)
	}
}

// TestConcurrentOneKeyAdmitsExactlyTheLimit is the lost-update test: 100
// goroutines on one key with limit 10 must admit exactly 10. Run it with
// -race and -count=20.
func TestConcurrentOneKeyAdmitsExactlyTheLimit(t *testing.T) {
	t.Parallel()
	for _, p := range []*Policy{tenPerMinute(), MustPolicy("layered", PerMinute(10), PerSecond(50))} {
		l, _, _ := newTestLimiter(t, p, noon)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		errs := make(chan error, 100)
		start := make(chan struct{})
		for range 100 {
			wg.Go(func() {
				<-start
				d, err := l.Allow(context.Background(), "user-1", 1)
				if err != nil {
					errs <- err
					return
				}
				if d.Allowed {
					admitted.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Allow: %v", err)
		}
		if got := admitted.Load(); got != 10 {
			t.Fatalf("%v: admitted %d of 100 concurrent requests, want exactly 10", p, got)
		}
	}
}

func TestClosedLimiterOnSharedStore(t *testing.T) {
	t.Parallel()
	clk := limitertest.New(noon)
	st := newTestStore(t)
	a, _ := New(tenPerMinute(), WithStore(st), WithClock(clk))
	b, _ := New(MustPolicy("b", PerMinute(10)), WithStore(st), WithClock(clk))
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Allow(context.Background(), "k", 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Allow on a closed limiter = %v, want ErrClosed", err)
	}
	if err := a.Reset(context.Background(), "k"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Reset on a closed limiter = %v, want ErrClosed", err)
	}
	if d := allow(t, b, "k", 1); !d.Allowed {
		t.Fatal("closing one limiter closed the store it shares")
	}
}

// TestExtremeClocks: instants at the ends of int64 milliseconds are
// clamped (to ±2^62 ms, 146 million years) before any window arithmetic,
// so the limit still holds and nothing overflows.
func TestExtremeClocks(t *testing.T) {
	t.Parallel()
	for _, at := range []time.Time{
		time.UnixMilli(math.MaxInt64 - 10),
		time.UnixMilli(math.MinInt64 + 10),
		time.UnixMilli(1 << 62),
		time.UnixMilli(-1 << 62),
	} {
		l, _, _ := newTestLimiter(t, MustPolicy("x", PerMinute(2)), at)
		for i := range 3 {
			d := allow(t, l, "k", 1)
			if d.Allowed != (i < 2) || d.Remaining < 0 || d.RetryAfter < 0 || d.RetryAfter > time.Minute {
				t.Fatalf("at %d ms, request %d: %+v", at.UnixMilli(), i+1, d)
			}
		}
	}
}

// resetRecorder is a store that records the instant Reset is given.
type resetRecorder struct {
	*MemoryStore
	at time.Time
}

func (r *resetRecorder) Reset(ctx context.Context, key string, p *Policy, now time.Time) error {
	r.at = now
	return r.MemoryStore.Reset(ctx, key, p, now)
}

// TestResetPassesTheLimitersInstant: a store that names windows by the
// time (redisstore on the limiter's clock) finds them with that clock,
// not one of its own.
func TestResetPassesTheLimitersInstant(t *testing.T) {
	t.Parallel()
	clk := limitertest.New(noon.Add(42 * time.Second))
	st := &resetRecorder{MemoryStore: newTestStore(t)}
	l, err := New(tenPerMinute(), WithStore(st), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Reset(context.Background(), "k"); err != nil {
		t.Fatal(err)
	}
	if want := clk.Now(); !st.at.Equal(want) {
		t.Fatalf("Reset got the instant %v, want the limiter's clock reading %v", st.at, want)
	}
}

// TestAllowAtDecidesAtTheGivenInstant: AllowAt takes the instant
// instead of reading the clock, as Allow and Peek do, and Clock returns
// the clock that Allow reads.
func TestAllowAtDecidesAtTheGivenInstant(t *testing.T) {
	t.Parallel()
	l, clk, _ := newTestLimiter(t, MustPolicy("m", PerMinute(1)), noon)
	if got := l.Clock(); got != Clock(clk) {
		t.Fatalf("Clock() = %v, want the clock given to WithClock", got)
	}
	ctx := context.Background()
	if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed || !d.DecidedAt().Equal(noon) {
		t.Fatalf("Allow on the clock at 12:00 = %+v, %v; want allowed, decided at 12:00", d, err)
	}
	clk.Set(noon.Add(time.Minute))
	if d, err := l.Peek(ctx, "k", 1); err != nil || !d.Allowed || !d.DecidedAt().Equal(noon.Add(time.Minute)) {
		t.Fatalf("Peek at 12:01 = %+v, %v; want allowed, decided at 12:01", d, err)
	}
	clk.Set(noon)
	if d, err := l.AllowAt(ctx, "k", 1, noon.Add(time.Minute)); err != nil || !d.Allowed {
		t.Fatalf("AllowAt(12:01) = %+v, %v; want allowed: Peek charged nothing", d, err)
	}
	if d, err := l.AllowAt(ctx, "k", 1, noon.Add(time.Minute)); err != nil || d.Allowed {
		t.Fatalf("second AllowAt(12:01) = %+v, %v; want refused", d, err)
	}
	if clk.Now() != noon {
		t.Fatalf("the clock moved to %v; AllowAt must not move it", clk.Now())
	}
}

// TestNewWithFakeClockKeepsCountsWhileClockStopped: a limiter given a fake
// clock makes its store without the background sweep, which runs on the
// monotonic clock and would free a window the stopped clock is still in.
// A budget spent at 12:00:59.9 stays spent through minutes of real time
// (the bubble's, which passes without waiting) until the clock moves.
func TestNewWithFakeClockKeepsCountsWhileClockStopped(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		clk := limitertest.New(noon.Add(time.Minute - 100*time.Millisecond))
		l, err := New(MustPolicy("m", PerMinute(1)), WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		if d := allow(t, l, "k", 1); !d.Allowed {
			t.Fatalf("first request refused: %+v", d)
		}
		time.Sleep(3 * defaultSweepInterval)
		synctest.Wait()
		if d := allow(t, l, "k", 1); d.Allowed {
			t.Fatalf("with the clock stopped at %v, the second request of the minute was admitted after %v of real time: the store swept the window", clk.Now(), 3*defaultSweepInterval)
		}
		clk.Advance(100 * time.Millisecond)
		if d := allow(t, l, "k", 1); !d.Allowed {
			t.Fatalf("the next minute refused: %+v", d)
		}
	})
}

// TestNewWithSystemClockSweeps: the default store of a limiter on the
// system clock keeps its background sweep, which frees a window nobody
// touches once it has ended.
func TestNewWithSystemClockSweeps(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l, err := New(MustPolicy("m", PerMinute(1)))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		allow(t, l, "k", 1)
		if n := l.owned.Stats().Keys; n != 1 {
			t.Fatalf("after one request: %d counters held, want 1", n)
		}
		time.Sleep(3 * defaultSweepInterval)
		synctest.Wait()
		if n := l.owned.Stats().Keys; n != 0 {
			t.Fatalf("%v after the window ended, untouched: %d counters held, want 0", 3*defaultSweepInterval, n)
		}
	})
}
