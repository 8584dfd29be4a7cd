package limiter

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func newTestStore(t testing.TB, opts ...MemoryOption) *MemoryStore {
	t.Helper()
	st, err := NewMemoryStore(append([]MemoryOption{WithSweepInterval(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func take(t testing.TB, st *MemoryStore, p *Policy, key string, now time.Time) Decision {
	t.Helper()
	d, err := st.Take(context.Background(), Request{Key: key, Policy: p, Now: now, Cost: 1})
	if err != nil {
		t.Fatalf("Take(%q): %v", key, err)
	}
	return d
}

func TestNewMemoryStoreErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opt  MemoryOption
		want string
	}{
		{"zero_shards", WithShards(0), "shards 0"},
		{"too_many_shards", WithShards(1 << 17), "shards 131072"},
		{"zero_max_keys", WithMaxKeys(0), "max keys 0"},
		{"fewer_keys_than_one_layered_policy_needs", WithMaxKeys(MaxWindows - 1), "must be ≥ 4"},
		{"negative_sweep", WithSweepInterval(-time.Second), "sweep interval"},
		{"nil_option", nil, "nil MemoryOption"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewMemoryStore(tt.opt)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewMemoryStore = %v, want error containing %q", err, tt.want)
			}
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("NewMemoryStore = %v, want it to wrap ErrInvalidOption", err)
			}
		})
	}
}

func TestMemoryStoreShardsAndBound(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		maxKeys, shards     int
		wantShards, wantMax int
	}{
		{"defaults", defaultMaxKeys, defaultShards, 256, defaultMaxKeys},
		{"shards_round_up", 1000, 100, 128, 896},
		{"few_keys_fewer_shards", 10, 256, 2, 10},
		{"smallest", MaxWindows, 4, 1, MaxWindows},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newTestStore(t, WithMaxKeys(tt.maxKeys), WithShards(tt.shards))
			if len(st.shards) != tt.wantShards || st.Stats().MaxKeys != tt.wantMax {
				t.Fatalf("shards %d, MaxKeys %d; want %d, %d", len(st.shards), st.Stats().MaxKeys, tt.wantShards, tt.wantMax)
			}
		})
	}
}

// TestMemoryStoreFloodStaysAtBound floods the store with ten times its
// bound in distinct keys, all in one window.
func TestMemoryStoreFloodStaysAtBound(t *testing.T) {
	t.Parallel()
	const bound = 4096
	st := newTestStore(t, WithMaxKeys(bound), WithShards(16))
	p := MustPolicy("flood", PerMinute(5))
	for i := range 10 * bound {
		if d := take(t, st, p, "k"+strconv.Itoa(i), noon); !d.Allowed {
			t.Fatalf("fresh key %d refused", i)
		}
	}
	if got := st.Stats().Keys; got != bound {
		t.Fatalf("Keys = %d after a flood of %d keys, want the bound %d", got, 10*bound, bound)
	}
	if got, want := st.Stats().Evictions, uint64(9*bound); got != want {
		t.Fatalf("Evictions = %d, want %d (every key past the bound evicts one)", got, want)
	}
}

// TestMemoryStoreFullShardFreesPastWindowsFirst: at the bound, counters of
// windows that have passed go before any current one.
func TestMemoryStoreFullShardFreesPastWindowsFirst(t *testing.T) {
	t.Parallel()
	st := newTestStore(t, WithMaxKeys(8), WithShards(1))
	minute := MustPolicy("m", PerMinute(5))
	second := MustPolicy("s", PerSecond(5))
	for i := range 4 {
		take(t, st, minute, "m"+strconv.Itoa(i), noon)
		take(t, st, second, "s"+strconv.Itoa(i), noon)
	}
	later := noon.Add(2 * time.Second) // the second-window counters are past
	for i := range 4 {
		take(t, st, minute, "late"+strconv.Itoa(i), later)
	}
	if st.Stats().Evictions != 0 {
		t.Fatalf("evicted %d current counters while past ones could be freed", st.Stats().Evictions)
	}
	if d := take(t, st, minute, "m0", later); d.Remaining != 3 {
		t.Fatalf("m0 lost its count: remaining %d, want 3", d.Remaining)
	}
}

// TestMemoryStoreFullShardFreesStaleFutureWindowsFirst: counters that a
// clock stepped forward left in a window far ahead are stale once the
// clock is corrected, and go before any current counter.
func TestMemoryStoreFullShardFreesStaleFutureWindowsFirst(t *testing.T) {
	t.Parallel()
	st := newTestStore(t, WithMaxKeys(8), WithShards(1))
	minute := MustPolicy("m", PerMinute(5))
	second := MustPolicy("s", PerSecond(5))
	glitch := noon.Add(time.Hour)
	for i := range 4 {
		take(t, st, second, "s"+strconv.Itoa(i), glitch)
	}
	for i := range 8 {
		take(t, st, minute, "m"+strconv.Itoa(i), noon)
	}
	if st.Stats().Evictions != 0 {
		t.Fatalf("evicted %d current counters while the glitched hour's could be freed", st.Stats().Evictions)
	}
	if d := take(t, st, minute, "m0", noon); d.Remaining != 3 {
		t.Fatalf("m0 lost its count: remaining %d, want 3", d.Remaining)
	}
}

func TestMemoryStoreEvictionNeverTakesTheRequestingKey(t *testing.T) {
	t.Parallel()
	st := newTestStore(t, WithMaxKeys(4), WithShards(1))
	p := MustPolicy("api", PerMinute(5), PerSecond(5)) // two counters per key
	take(t, st, p, "a", noon)
	take(t, st, p, "b", noon)
	for range 2 {
		if d := take(t, st, p, "c", noon); !d.Allowed {
			t.Fatalf("c refused: %+v", d)
		}
	}
	if st.Stats().Keys != 4 || st.Stats().Evictions != 2 {
		t.Fatalf("Len %d, Evictions %d; want 4 and 2", st.Stats().Keys, st.Stats().Evictions)
	}
	if d := take(t, st, p, "c", noon); d.Remaining != 2 {
		t.Fatalf("c's own counters were evicted: remaining %d, want 2", d.Remaining)
	}
}

func TestMemoryStoreRotationFreesPastWindow(t *testing.T) {
	t.Parallel()
	st := newTestStore(t)
	p := MustPolicy("m", PerMinute(5))
	for i := range 100 {
		take(t, st, p, "k"+strconv.Itoa(i), noon)
	}
	if st.Stats().Keys != 100 {
		t.Fatalf("Keys = %d, want 100", st.Stats().Keys)
	}
	st.Sweep(noon.Add(59 * time.Second))
	if st.Stats().Keys != 100 {
		t.Fatalf("Sweep inside the window freed counters: Keys = %d", st.Stats().Keys)
	}
	st.Sweep(noon.Add(time.Minute))
	if st.Stats().Keys != 0 {
		t.Fatalf("Sweep after the window left %d counters", st.Stats().Keys)
	}
	if d := take(t, st, p, "k1", noon.Add(time.Minute)); d.Remaining != 4 {
		t.Fatalf("k1 in the next window: remaining %d, want 4", d.Remaining)
	}
}

// TestMemoryStoreSweepLoopKeepsRequestsTime: the background sweep has no
// clock of its own; it frees a table when its window has ended by the
// instant of the request that placed it there, plus the monotonic time
// elapsed since. Requests dated 2030 sweep in 2030's windows, whatever the
// wall clock says: the minute they left 50ms of is freed by the first
// sweep 50ms later, the hour they left 1s of by the first sweep 1s later,
// and neither before. The bubble's time stands in for the monotonic clock
// and drives the sweep's ticker, so nothing waits in real time.
func TestMemoryStoreSweepLoopKeepsRequestsTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		at := time.Date(2030, 1, 1, 12, 59, 59, 0, time.UTC)
		st, err := NewMemoryStore(WithSweepInterval(10*time.Millisecond), WithShards(1))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		take(t, st, MustPolicy("h", PerHour(5)), "k", at)
		take(t, st, MustPolicy("m", PerMinute(5)), "k", at.Add(950*time.Millisecond))
		var elapsed time.Duration
		for _, step := range []struct {
			sleep time.Duration
			want  int
		}{
			{45 * time.Millisecond, 2},  // 45ms: the minute has 5ms left
			{10 * time.Millisecond, 1},  // 55ms: swept at 50ms
			{940 * time.Millisecond, 1}, // 995ms: the hour has 5ms left
			{10 * time.Millisecond, 0},  // 1005ms: swept at 1s
		} {
			time.Sleep(step.sleep)
			synctest.Wait()
			elapsed += step.sleep
			if n := st.Stats().Keys; n != step.want {
				t.Fatalf("%v after the requests: %d counters held, want %d", elapsed, n, step.want)
			}
		}
	})
}

// TestMemoryStoreClockBehindChargesCurrentWindow: a request whose instant
// is older than the window a shard already moved to (its clock read raced
// another request's) is charged to the current window, never rewinding it.
func TestMemoryStoreClockBehindChargesCurrentWindow(t *testing.T) {
	t.Parallel()
	st := newTestStore(t)
	p := MustPolicy("m", PerMinute(2))
	take(t, st, p, "k", noon.Add(time.Minute))
	d := take(t, st, p, "k", noon.Add(59*time.Second))
	if !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(noon.Add(2*time.Minute)) {
		t.Fatalf("late request: %+v, want charged to the 12:01 window", d)
	}
	if d := take(t, st, p, "k", noon.Add(time.Minute)); d.Allowed {
		t.Fatal("third request in the 12:01 window admitted")
	}
}

// TestMemoryStoreLayeredClockBehindChargesCurrentWindows: a late clock
// read one window behind decides every window of a layered policy at the
// start of the window the shard moved to, so neither count is rewound.
func TestMemoryStoreLayeredClockBehindChargesCurrentWindows(t *testing.T) {
	t.Parallel()
	st := newTestStore(t)
	p := MustPolicy("ms", PerMinute(3), PerSecond(2))
	take(t, st, p, "k", noon.Add(time.Minute))
	d := take(t, st, p, "k", noon.Add(time.Minute-time.Millisecond))
	if !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(noon.Add(time.Minute+time.Second)) {
		t.Fatalf("late request: %+v, want charged to 12:01:00's windows, the second's spent", d)
	}
	if d := take(t, st, p, "k", noon.Add(time.Minute+time.Second)); !d.Allowed || d.Remaining != 0 || !d.ResetAt.Equal(noon.Add(2*time.Minute)) {
		t.Fatalf("third request at 12:01:01: %+v, want admitted with the minute spent", d)
	}
}

func TestMemoryStoreCloseIsIdempotentAndStopsSweep(t *testing.T) {
	t.Parallel()
	st, err := NewMemoryStore(WithSweepInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := st.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	select {
	case <-st.done:
	default:
		t.Fatal("sweep goroutine still running after Close")
	}
	_, err = st.Take(context.Background(), Request{Key: "k", Policy: tenPerMinute(), Now: noon, Cost: 1})
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("Take after Close = %v, want ErrClosed", err)
	}
}

func TestMemoryStoreResetOfUnknownKey(t *testing.T) {
	t.Parallel()
	st := newTestStore(t)
	if err := st.Reset(context.Background(), "nobody", tenPerMinute(), noon); err != nil {
		t.Fatal(err)
	}
	if err := st.Reset(context.Background(), "k", nil, noon); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("Reset with nil policy = %v, want ErrInvalidPolicy", err)
	}
}

// TestMemoryStoreRefusesBadRequests: a store called directly checks what
// Limiter would have: no policy, a cost of zero or less, an empty key.
func TestMemoryStoreRefusesBadRequests(t *testing.T) {
	t.Parallel()
	st := newTestStore(t)
	p := tenPerMinute()
	for _, tt := range []struct {
		name string
		req  Request
		want error
	}{
		{"nil_policy", Request{Key: "k", Now: noon, Cost: 1}, ErrInvalidPolicy},
		{"zero_policy", Request{Key: "k", Policy: &Policy{}, Now: noon, Cost: 1}, ErrInvalidPolicy},
		{"negative_cost", Request{Key: "k", Policy: p, Now: noon, Cost: -5}, ErrInvalidCost},
		{"zero_cost", Request{Key: "k", Policy: p, Now: noon}, ErrInvalidCost},
		{"empty_key", Request{Policy: p, Now: noon, Cost: 1}, ErrInvalidKey},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := st.Take(context.Background(), tt.req); !errors.Is(err, tt.want) {
				t.Fatalf("Take(%+v) = %v, want %v", tt.req, err, tt.want)
			}
			if st.Stats().Keys != 0 {
				t.Fatalf("a refused request created %d counters", st.Stats().Keys)
			}
		})
	}
}

// TestMemoryStoreFullShardOfManyTablesFreesPastFirst: a shard with a
// table per window length (as a policy counted in each customer's zone
// has one per zone) frees a past window's counters before it evicts a
// current one, wherever that table is among them, also after a full
// shard has evicted (which bounds when its tables can hold past
// counters, so that it need not look through them all per eviction).
func TestMemoryStoreFullShardOfManyTablesFreesPastFirst(t *testing.T) {
	t.Parallel()
	const tables = 40
	st := newTestStore(t, WithMaxKeys(2*tables), WithShards(1))
	var policies []*Policy
	for i := range tables {
		policies = append(policies, MustPolicy("p"+strconv.Itoa(i), Rate{Limit: 5, Window: time.Duration(i+2) * time.Minute}))
	}
	second := MustPolicy("s", PerSecond(5))
	for i := range tables {
		take(t, st, second, "s"+strconv.Itoa(i), noon)
		take(t, st, policies[i], "k"+strconv.Itoa(i), noon)
	}
	take(t, st, policies[0], "one-more", noon) // full: one current counter goes
	if n := st.Stats().Evictions; n != 1 {
		t.Fatalf("a full shard of current counters evicted %d for a new key, want 1", n)
	}
	// The second's counters are past (39 or 40 of them: the one evicted
	// may have been one); no minute window has ended. 39 new counters
	// fit in their room whichever it was.
	later := noon.Add(2 * time.Second)
	for i := range tables - 1 {
		take(t, st, policies[i], "late"+strconv.Itoa(i), later)
	}
	if n := st.Stats().Evictions - 1; n != 0 {
		t.Fatalf("evicted %d current counters while at least %d past ones could be freed", n, tables-1)
	}
}
