package limiter

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// newTestInFlight returns a cap of max on a memory store of its own,
// dated by a fake clock at noon, closed when the test ends.
func newTestInFlight(t testing.TB, max int64, opts ...MemoryOption) (*InFlight, *limitertest.Clock, *MemoryStore) {
	t.Helper()
	st, err := NewMemoryStore(append([]MemoryOption{WithSweepInterval(0)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	clk := limitertest.New(noon)
	f, err := NewInFlight("exports", max, WithStore(st), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, clk, st
}

// acquire calls f.Acquire and fails the test on an error.
func acquire(t testing.TB, f *InFlight, key string) (Decision, func()) {
	t.Helper()
	d, release, err := f.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	if d.Allowed != (release != nil) {
		t.Fatalf("Acquire(%q): allowed %v with release %v: a release comes with an admission only", key, d.Allowed, release != nil)
	}
	return d, release
}

func TestInFlightAdmitsMaxThenRefuses(t *testing.T) {
	f, _, _ := newTestInFlight(t, 3)
	for i := range int64(3) {
		d, _ := acquire(t, f, "k")
		if !d.Allowed || d.Limit != 3 || d.Remaining != 2-i {
			t.Fatalf("acquire %d: got allowed %v limit %d remaining %d, want true 3 %d", i+1, d.Allowed, d.Limit, d.Remaining, 2-i)
		}
		if d.Policy != f.Policy() || d.Window != 0 || !d.ResetAt.IsZero() || d.RetryAfter != 0 {
			t.Fatalf("acquire %d: %+v: want the cap's policy, no window, no reset, no retry", i+1, d)
		}
		if got := d.DecidedAt(); !got.Equal(noon) {
			t.Fatalf("acquire %d: DecidedAt %v, want the clock's %v", i+1, got, noon)
		}
	}
	d, release := acquire(t, f, "k")
	if d.Allowed || release != nil || d.Limit != 3 || d.Remaining != 0 {
		t.Fatalf("fourth: %+v release %v: want refused, limit 3, remaining 0, no release", d, release != nil)
	}
	if d.RetryAfter != time.Second || !d.ResetAt.Equal(noon.Add(time.Second)) {
		t.Fatalf("fourth: retry %v reset %v, want 1s (no release seen yet) and %v", d.RetryAfter, d.ResetAt, noon.Add(time.Second))
	}
	if d, _ := acquire(t, f, "other"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("another key: %+v, want admitted with 2 left: keys are apart", d)
	}
}

// refusingStore refuses every slot, saying the key holds held: as a
// store may when it cannot count a key's slots (the Redis store once
// said 0 for a foreign value under the key), or after a cap was lowered.
type refusingStore struct {
	*MemoryStore
	held int64
}

func (s refusingStore) AcquireSlot(_ context.Context, req SlotRequest) (Slot, error) {
	return Slot{Held: s.held, Max: req.Max}, nil
}

// A refusal leaves nothing, whatever the store says it holds.
func TestInFlightRefusalHasNoneRemaining(t *testing.T) {
	for _, tc := range []struct {
		name string
		held int64
	}{
		{"none_held", 0},
		{"fewer_than_max", 2},
		{"max", 3},
		{"over_max", 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := NewMemoryStore(WithSweepInterval(0))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			f, err := NewInFlight("exports", 3, WithStore(refusingStore{st, tc.held}), WithClock(limitertest.New(noon)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.Close() })
			if d, _ := acquire(t, f, "k"); d.Allowed || d.Limit != 3 || d.Remaining != 0 {
				t.Fatalf("a refusal with %d held: got allowed %v limit %d remaining %d, want refused, limit 3, remaining 0",
					tc.held, d.Allowed, d.Limit, d.Remaining)
			}
		})
	}
}

func TestInFlightReleaseFreesOneSlotOnce(t *testing.T) {
	f, _, _ := newTestInFlight(t, 2)
	_, r1 := acquire(t, f, "k")
	_, r2 := acquire(t, f, "k")
	r1()
	r1() // a second call is harmless: it frees nothing more
	if d, r3 := acquire(t, f, "k"); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after one release: %+v, want one slot back and none left", d)
	} else {
		defer r3()
	}
	if d, _ := acquire(t, f, "k"); d.Allowed {
		t.Fatalf("after a release called twice: admitted a third request of a cap of 2")
	}
	r2()
}

func TestInFlightReleaseFromOtherGoroutines(t *testing.T) {
	f, _, st := newTestInFlight(t, 64)
	var releases []func()
	for range 64 {
		_, r := acquire(t, f, "k")
		releases = append(releases, r)
	}
	var wg sync.WaitGroup
	for _, r := range releases {
		for range 3 { // each from three goroutines at once: one frees
			wg.Go(r)
		}
	}
	wg.Wait()
	if n := st.Stats().SlotKeys; n != 0 {
		t.Fatalf("after every release: %d keys hold slots, want 0", n)
	}
	if d, _ := acquire(t, f, "k"); d.Remaining != 63 {
		t.Fatalf("after every release: remaining %d, want 63", d.Remaining)
	}
}

// Exactly max at once under 64 concurrent clients: never more, and the
// cap is reached (the first max to get in wait until all max are in).
func TestInFlightConcurrentClientsHoldExactlyMax(t *testing.T) {
	const max, clients, rounds = 5, 64, 200
	f, _, _ := newTestInFlight(t, max)
	var (
		running, peak atomic.Int64
		full          = make(chan struct{})
		once          sync.Once
		wg            sync.WaitGroup
	)
	for range clients {
		wg.Go(func() {
			for range rounds {
				d, release, err := f.Acquire(context.Background(), "k")
				if err != nil {
					t.Error(err)
					return
				}
				if !d.Allowed {
					continue
				}
				n := running.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				if n == max {
					once.Do(func() { close(full) })
				}
				<-full
				running.Add(-1)
				release()
			}
		})
	}
	wg.Wait()
	if p := peak.Load(); p != max {
		t.Fatalf("peak of %d handlers at once, want exactly %d", p, max)
	}
}

func TestInFlightClockStepFreesNothing(t *testing.T) {
	f, clk, _ := newTestInFlight(t, 1)
	_, release := acquire(t, f, "k")
	for _, step := range []time.Duration{365 * 24 * time.Hour, -2 * 365 * 24 * time.Hour} {
		clk.Advance(step)
		if d, _ := acquire(t, f, "k"); d.Allowed {
			t.Fatalf("after a clock step of %v: admitted a second request of a cap of 1", step)
		}
	}
	release()
	if d, r := acquire(t, f, "k"); !d.Allowed {
		t.Fatalf("after the release: refused")
	} else {
		r()
	}
}

func TestInFlightRetryAfterIsTheMeanHold(t *testing.T) {
	f, clk, _ := newTestInFlight(t, 1)
	hold := func(d time.Duration) {
		t.Helper()
		_, release := acquire(t, f, "k")
		clk.Advance(d)
		release()
	}
	// A slot held throughout on another key, so that asking for a
	// refusal's RetryAfter releases nothing.
	_, busy := acquire(t, f, "busy")
	defer busy()
	refusedRetry := func() time.Duration {
		t.Helper()
		d, _ := acquire(t, f, "busy")
		if d.Allowed {
			t.Fatal("admitted two of a cap of 1")
		}
		if !d.ResetAt.Equal(d.DecidedAt().Add(d.RetryAfter)) {
			t.Fatalf("reset %v, want the decision's instant %v plus retry %v", d.ResetAt, d.DecidedAt(), d.RetryAfter)
		}
		return d.RetryAfter
	}
	hold(8 * time.Second)
	if got := refusedRetry(); got != 8*time.Second {
		t.Fatalf("after one hold of 8s: retry %v, want 8s", got)
	}
	hold(16 * time.Second) // 8 − 1 + 2: 7/8 the old, 1/8 the new
	if got := refusedRetry(); got != 9*time.Second {
		t.Fatalf("after holds of 8s and 16s: retry %v, want 9s", got)
	}
	for range 100 {
		hold(0)
	}
	if got := refusedRetry(); got != time.Second {
		t.Fatalf("after many instant holds: retry %v, want the 1s floor", got)
	}
	hold(-time.Hour) // the clock stepped back mid-request: a hold of 0
	hold(100 * 365 * 24 * time.Hour)
	if got := refusedRetry(); got > time.Hour/8+time.Second {
		t.Fatalf("after a hold of a century (a clock step): retry %v, want at most an hour's share", got)
	}
}

func TestInFlightErrors(t *testing.T) {
	f, _, _ := newTestInFlight(t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range []struct {
		name string
		ctx  context.Context
		key  string
		want error
	}{
		{"empty_key", context.Background(), "", ErrInvalidKey},
		{"done_context", ctx, "k", context.Canceled},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, release, err := f.Acquire(c.ctx, c.key)
			if !errors.Is(err, c.want) || d.Allowed || release != nil {
				t.Fatalf("got %+v, release %v, err %v; want %v and nothing held", d, release != nil, err, c.want)
			}
		})
	}
	if d, _ := acquire(t, f, "k"); !d.Allowed {
		t.Fatal("the refused calls took a slot")
	}
}

func TestInFlightCloseThenRelease(t *testing.T) {
	st, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := NewInFlight("exports", 1, WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	_, release := acquire(t, f, "k")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, r, err := f.Acquire(context.Background(), "k"); !errors.Is(err, ErrClosed) || r != nil {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	// The name is free again; the slot is still held until released.
	g, err := NewInFlight("exports", 1, WithStore(st))
	if err != nil {
		t.Fatalf("a new InFlight of the name, after Close: %v", err)
	}
	defer g.Close()
	if d, _ := acquire(t, g, "k"); d.Allowed {
		t.Fatal("the closed InFlight's held slot was lost")
	}
	release() // after Close: still goes back to the open store
	release()
	if d, r := acquire(t, g, "k"); !d.Allowed {
		t.Fatal("a release after Close did not give the slot back")
	} else {
		r()
	}
	// An InFlight's own store is closed with it; a release after that
	// is harmless.
	own, err := NewInFlight("own", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, r := acquire(t, own, "k")
	own.Close()
	r()
}

func TestNewInFlightErrors(t *testing.T) {
	st, err := NewMemoryStore(WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	live, err := NewInFlight("taken", 1, WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	for _, c := range []struct {
		name     string
		capName  string
		max      int64
		opts     []Option
		want     error
		contains string
	}{
		{"max_zero", "x", 0, nil, ErrInvalidPolicy, "max 0"},
		{"max_negative", "x", -1, nil, ErrInvalidPolicy, "max -1"},
		{"max_above_MaxLimit", "x", MaxLimit + 1, nil, ErrInvalidPolicy, "max"},
		{"empty_name", "", 1, nil, ErrInvalidPolicy, "no name"},
		{"bad_name", "a b", 1, nil, ErrInvalidPolicy, "character"},
		{"nil_option", "x", 1, []Option{nil}, ErrInvalidOption, "nil"},
		{"nil_store", "x", 1, []Option{WithStore(nil)}, ErrInvalidOption, "WithStore(nil)"},
		{"nil_clock", "x", 1, []Option{WithClock(nil)}, ErrInvalidOption, "WithClock(nil)"},
		{"lease_under_1s", "x", 1, []Option{WithInFlightLease(999 * time.Millisecond)}, ErrInvalidOption, "WithInFlightLease(999ms)"},
		{"lease_zero", "x", 1, []Option{WithInFlightLease(0)}, ErrInvalidOption, "WithInFlightLease(0s)"},
		{"store_without_slots", "x", 1, []Option{WithStore(rateOnlyStore{})}, ErrInvalidOption, "no in-flight slots"},
		{"second_live_name_on_one_store", "taken", 1, []Option{WithStore(st)}, ErrInvalidOption, "already live"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := NewInFlight(c.capName, c.max, c.opts...)
			if !errors.Is(err, c.want) || f != nil || !strings.Contains(err.Error(), c.contains) {
				t.Fatalf("got %v, %v; want an error wrapping %v that says %q", f, err, c.want, c.contains)
			}
		})
	}
	// The same name on another store, or another name on this one, is
	// no conflict.
	for _, opts := range [][]Option{nil, {WithStore(st), WithInFlightLease(time.Minute)}} {
		name := "taken"
		if len(opts) > 0 {
			name = "free"
		}
		f, err := NewInFlight(name, 1, opts...)
		if err != nil {
			t.Fatalf("NewInFlight(%q): %v", name, err)
		}
		if f.lease != time.Minute && len(opts) > 0 || f.lease != 10*time.Second && len(opts) == 0 {
			t.Fatalf("lease %v", f.lease)
		}
		f.Close()
	}
}

// rateOnlyStore is a Store that keeps no slots.
type rateOnlyStore struct{}

func (rateOnlyStore) Take(context.Context, Request) (Decision, error) { return Decision{}, nil }
func (rateOnlyStore) Reset(context.Context, string, *Policy, time.Time) error {
	return nil
}
func (rateOnlyStore) Refund(context.Context, Request, Decision) error { return nil }

func TestNewRefusesInFlightOptionsAndPolicies(t *testing.T) {
	_, err := New(tenPerMinute(), WithInFlightLease(time.Minute))
	if !errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "WithInFlightLease(1m0s) does not apply to New") {
		t.Fatalf("New with WithInFlightLease: %v, want ErrInvalidOption naming it", err)
	}
	f, err := NewInFlight("exports", 5)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := New(f.Policy()); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("New with a cap's policy: %v, want ErrInvalidPolicy", err)
	}
	st, _ := NewMemoryStore(WithSweepInterval(0))
	defer st.Close()
	if _, err := st.Take(context.Background(), Request{Key: "k", Policy: f.Policy(), Now: noon, Cost: 1}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("Take under a cap's policy: %v, want ErrInvalidPolicy", err)
	}
	p := tenPerMinute()
	if _, err := st.AcquireSlot(context.Background(), SlotRequest{Key: "k", Policy: p, Max: 1, Lease: time.Second}); !errors.Is(err, ErrInvalidPolicy) {
		t.Fatalf("AcquireSlot under a rate policy: %v, want ErrInvalidPolicy", err)
	}
	if got, want := f.Policy().String(), "exports: 5 in flight"; got != want {
		t.Fatalf("String: %q, want %q", got, want)
	}
	if f.Policy().MaxInFlight() != 5 || p.MaxInFlight() != 0 || (*Policy)(nil).MaxInFlight() != 0 {
		t.Fatal("MaxInFlight: want 5 for the cap, 0 for rates and nil")
	}
	if f.Policy().ID() == MustPolicy("exports", PerMinute(5)).ID() {
		t.Fatal("a cap and a rate policy of one name share an id")
	}
}

// A key with nothing in flight holds no entry, and a table emptied by a
// burst gives its memory back.
func TestInFlightIdleKeysHoldNoMemory(t *testing.T) {
	f, _, st := newTestInFlight(t, 2, WithShards(1))
	var releases []func()
	for i := range 5000 {
		_, r := acquire(t, f, "k"+string(rune('a'+i%26))+string(rune(i)))
		releases = append(releases, r)
	}
	if n := st.Stats().SlotKeys; n != 5000 {
		t.Fatalf("%d keys hold slots, want 5000", n)
	}
	big := len(st.table().shards[0].t.slots)
	for _, r := range releases[:4990] {
		r()
	}
	if n, size := st.Stats().SlotKeys, len(st.table().shards[0].t.slots); n != 10 || size*8 > big {
		t.Fatalf("after 4,990 releases: %d keys in %d slots (from %d), want 10 keys in at most an eighth", n, size, big)
	}
	for _, r := range releases[4990:] {
		r()
	}
	if n := st.Stats().SlotKeys; n != 0 {
		t.Fatalf("after every release: %d keys hold slots, want 0", n)
	}
}

// The slots are bounded by WithMaxKeys: a full shard refuses a new key
// with ErrFull, never evicting a held slot, and keys that hold slots go
// on.
func TestInFlightBoundedByMaxKeys(t *testing.T) {
	f, _, st := newTestInFlight(t, 2, WithShards(1), WithMaxKeys(MaxWindows))
	var releases []func()
	for i := range MaxWindows {
		_, r := acquire(t, f, string(rune('a'+i)))
		releases = append(releases, r)
	}
	if _, r, err := f.Acquire(context.Background(), "new"); !errors.Is(err, ErrFull) || r != nil {
		t.Fatalf("a new key in a full store: %v, want ErrFull", err)
	}
	if d, r := acquire(t, f, "a"); !d.Allowed {
		t.Fatal("a key that holds a slot was refused its second")
	} else {
		r()
	}
	releases[0]()
	if d, r := acquire(t, f, "new"); !d.Allowed {
		t.Fatal("a new key after a key's last release: refused")
	} else {
		r()
	}
	for _, r := range releases[1:] {
		r()
	}
	if n := st.Stats().SlotKeys; n != 0 {
		t.Fatalf("%d keys hold slots, want 0", n)
	}
}

// Slots and the counters of a rate policy of the same name never mix.
func TestInFlightApartFromCounters(t *testing.T) {
	f, clk, st := newTestInFlight(t, 1)
	l, err := New(MustPolicy("exports", PerMinute(1)), WithStore(st), WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, release := acquire(t, f, "k")
	defer release()
	if d := allow(t, l, "k", 1); !d.Allowed {
		t.Fatal("a held slot spent a rate's budget")
	}
	if s := st.Stats(); s.Keys != 1 || s.SlotKeys != 1 {
		t.Fatalf("stats %+v, want one counter and one key with slots", s)
	}
}
