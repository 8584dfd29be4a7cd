package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/window"
)

func TestDecide(t *testing.T) {
	t.Parallel()
	minute := MustPolicy("m", Rate{Limit: 10, Window: time.Minute})
	at := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	cur, _, _ := window.ID(at.UnixMilli(), 60000)
	reset := time.Date(2026, 7, 31, 12, 1, 0, 0, time.UTC)
	tests := []struct {
		name          string
		count         int64
		window        int64
		cost          int64
		wantAllowed   bool
		wantRemaining int64
		wantCount     int64 // stored count after
		wantRetry     time.Duration
		wantNever     bool // CostExceedsLimit: no wait helps
	}{
		{"fresh_key", 0, 0, 1, true, 9, 1, 0, false},
		{"ninth_to_tenth", 9, cur, 1, true, 0, 10, 0, false},
		{"full_window_denied", 10, cur, 1, false, 0, 10, 30 * time.Second, false},
		{"stale_window_resets", 10, cur - 1, 1, true, 9, 1, 0, false},
		{"future_window_state_counts_as_empty", 10, cur + 1, 1, true, 9, 1, 0, false},
		{"weighted_fits_exactly", 5, cur, 5, true, 0, 10, 0, false},
		{"weighted_does_not_fit", 6, cur, 5, false, 4, 6, 30 * time.Second, false},
		{"cost_above_limit_denied_without_charge_or_wait", 0, cur, 11, false, 10, 0, 0, true},
		{"cost_above_limit_of_a_full_window", 10, cur, 11, false, 0, 10, 0, true},
		{"huge_cost_no_overflow", 0, cur, math.MaxInt64, false, 10, 0, 0, true},
		{"corrupt_huge_count_denied", math.MaxInt64, cur, 1, false, 0, math.MaxInt64, 30 * time.Second, false},
		{"corrupt_near_max_count_cost_one", math.MaxInt64 - 5, cur, 10, false, 0, math.MaxInt64 - 5, 30 * time.Second, false},
		{"corrupt_negative_count_fails_closed", -3, cur, 1, false, 0, -3, 30 * time.Second, false},
		{"corrupt_min_count_fails_closed", math.MinInt64, cur, 1, false, 0, math.MinInt64, 30 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := [MaxWindows]State{{Window: tt.window, Count: tt.count}}
			next, d := Decide(minute, prior, at, tt.cost)
			if d.Allowed != tt.wantAllowed || d.Remaining != tt.wantRemaining || d.RetryAfter != tt.wantRetry || d.CostExceedsLimit != tt.wantNever {
				t.Errorf("Decide(count %d, cost %d) = allowed %v remaining %d retry %v exceeds %v, want %v %d %v %v",
					tt.count, tt.cost, d.Allowed, d.Remaining, d.RetryAfter, d.CostExceedsLimit, tt.wantAllowed, tt.wantRemaining, tt.wantRetry, tt.wantNever)
			}
			if next[0].Window != cur || next[0].Count != tt.wantCount {
				t.Errorf("next state = %+v, want {Window:%d Count:%d}", next[0], cur, tt.wantCount)
			}
			if !d.ResetAt.Equal(reset) || d.Limit != 10 || d.Window != time.Minute || d.Policy != minute {
				t.Errorf("decision %+v: want ResetAt %v, Limit 10, Window 1m, the policy", d, reset)
			}
		})
	}
}

func TestDecideRetryAfterSubMillisecond(t *testing.T) {
	t.Parallel()
	p := MustPolicy("s", Rate{Limit: 1, Window: time.Second})
	at := time.Unix(100, int64(250*time.Millisecond+400*time.Microsecond))
	_, d := Decide(p, [MaxWindows]State{{Window: 100, Count: 1}}, at, 1)
	if want := 749*time.Millisecond + 600*time.Microsecond; d.RetryAfter != want {
		t.Errorf("RetryAfter = %v, want %v (to the aligned boundary at 101s)", d.RetryAfter, want)
	}
}

func TestDecidePreEpoch(t *testing.T) {
	t.Parallel()
	p := MustPolicy("s", Rate{Limit: 1, Window: time.Second})
	at := time.UnixMilli(-1500) // 1969-12-31T23:59:58.5Z, in window [-2000, -1000)
	next, d := Decide(p, [MaxWindows]State{}, at, 1)
	if !d.Allowed || next[0].Window != -2 || !d.ResetAt.Equal(time.UnixMilli(-1000)) {
		t.Fatalf("first request at -1.5s: allowed %v, state %+v, reset %v; want allowed, window -2, reset -1s",
			d.Allowed, next[0], d.ResetAt.UnixMilli())
	}
	_, d = Decide(p, next, at, 1)
	if d.Allowed || d.RetryAfter != 500*time.Millisecond {
		t.Fatalf("second request at -1.5s: allowed %v retry %v, want denied, 500ms", d.Allowed, d.RetryAfter)
	}
}

func TestDecideLayered(t *testing.T) {
	t.Parallel()
	p := MustPolicy("api", PerMinute(100), PerSecond(5))
	at := time.Date(2026, 7, 31, 12, 0, 30, 100*int(time.Millisecond), time.UTC)
	ms := at.UnixMilli()
	minID, _, _ := window.ID(ms, 60000)
	secID, _, _ := window.ID(ms, 1000)
	tests := []struct {
		name             string
		minCount, secCnt int64
		wantAllowed      bool
		wantWindow       time.Duration
		wantRemaining    int64
		wantRetry        time.Duration
		wantMin, wantSec int64
	}{
		{"both_room_second_is_closest", 10, 1, true, time.Second, 3, 0, 11, 2},
		{"second_full_refuses_minute_uncharged", 10, 5, false, time.Second, 0, 900 * time.Millisecond, 10, 5},
		{"minute_full_refuses_second_uncharged", 100, 0, false, time.Minute, 0, 29900 * time.Millisecond, 100, 0},
		{"both_full_reports_later_reset", 100, 5, false, time.Minute, 0, 29900 * time.Millisecond, 100, 5},
		{"minute_closest", 98, 0, true, time.Minute, 1, 0, 99, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prior := [MaxWindows]State{{Window: minID, Count: tt.minCount}, {Window: secID, Count: tt.secCnt}}
			next, d := Decide(p, prior, at, 1)
			if d.Allowed != tt.wantAllowed || d.Window != tt.wantWindow || d.Remaining != tt.wantRemaining || d.RetryAfter != tt.wantRetry {
				t.Errorf("got allowed %v window %v remaining %d retry %v; want %v %v %d %v",
					d.Allowed, d.Window, d.Remaining, d.RetryAfter, tt.wantAllowed, tt.wantWindow, tt.wantRemaining, tt.wantRetry)
			}
			if next[0].Count != tt.wantMin || next[1].Count != tt.wantSec {
				t.Errorf("next counts = (%d, %d), want (%d, %d)", next[0].Count, next[1].Count, tt.wantMin, tt.wantSec)
			}
			if d.NumWindows() != 2 || d.WindowAt(0).Window != time.Minute || d.WindowAt(1).Window != time.Second {
				t.Fatalf("%d windows, want 2: minute then second", d.NumWindows())
			}
		})
	}
}

// FuzzDecide replays a sequence of requests through Decide, as a store
// would, and checks the rule's invariants after every step: no window is
// ever charged more than its limit, remaining is never negative nor above
// the limit, a denial charges nothing, and retry-after never reaches past
// the deciding window's end.
func FuzzDecide(f *testing.F) {
	f.Add(int64(10), int64(60000), int64(0), int64(0), int64(1_785_499_230_000), []byte{1, 0, 1, 0, 1, 0})
	f.Add(int64(3), int64(10), int64(0), int64(0), int64(0), []byte{1, 1, 1, 1, 1, 1, 9, 1, 1, 1})
	f.Add(int64(100), int64(60000), int64(5), int64(1000), int64(-1500), []byte{200, 3, 7, 1, 255, 50})
	f.Add(int64(1), int64(1), int64(1), int64(7), int64(math.MaxInt64/2), []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, l1, w1, l2, w2, startMs int64, ops []byte) {
		rates := []Rate{{Limit: l1, Window: time.Duration(w1) * time.Millisecond}}
		if l2 != 0 {
			rates = append(rates, Rate{Limit: l2, Window: time.Duration(w2) * time.Millisecond})
		}
		if w1 <= 0 || w1 > math.MaxInt64/int64(time.Millisecond) || w2 < 0 || w2 > math.MaxInt64/int64(time.Millisecond) {
			return
		}
		p, err := NewPolicy("f", rates...)
		if err != nil {
			return
		}
		startMs = max(min(startMs, msBound/2), -msBound/2) // room for the steps below, no clamping in Decide
		var state [MaxWindows]State
		charged := make([]map[int64]int64, p.NumRates())
		for i := range charged {
			charged[i] = map[int64]int64{}
		}
		now := time.UnixMilli(startMs)
		for len(ops) >= 2 {
			step, costByte := ops[0], ops[1]
			ops = ops[2:]
			now = now.Add(time.Duration(step) * time.Duration(step) * time.Millisecond)
			cost := int64(costByte%16) + 1
			if costByte == 255 {
				cost = math.MaxInt64
			}
			next, d := Decide(p, state, now, cost)
			ms := now.UnixMilli()
			for i, r := range p.rates {
				id, _, end := window.ID(ms, r.Window.Milliseconds())
				if next[i].Window != id {
					t.Fatalf("next[%d].Window = %d, want %d", i, next[i].Window, id)
				}
				ws := d.WindowAt(i)
				if ws.Remaining < 0 || ws.Remaining > r.Limit {
					t.Fatalf("window %v remaining %d outside [0, %d]", r.Window, ws.Remaining, r.Limit)
				}
				if d.Allowed {
					charged[i][id] += cost
					if next[i].Count != charged[i][id] {
						t.Fatalf("window %v count %d, charged %d", r.Window, next[i].Count, charged[i][id])
					}
				} else if next[i].Count != charged[i][id] {
					t.Fatalf("denial changed window %v count to %d from %d", r.Window, next[i].Count, charged[i][id])
				}
				if charged[i][id] > r.Limit {
					t.Fatalf("window %v id %d charged %d > limit %d", r.Window, id, charged[i][id], r.Limit)
				}
				if !ws.ResetAt.Equal(time.UnixMilli(end)) {
					t.Fatalf("window %v reset %v, want %v", r.Window, ws.ResetAt, time.UnixMilli(end))
				}
			}
			if d.Allowed && d.RetryAfter != 0 {
				t.Fatalf("allowed with RetryAfter %v", d.RetryAfter)
			}
			if !d.Allowed && (d.RetryAfter <= 0 || now.Add(d.RetryAfter).After(d.ResetAt) || d.RetryAfter > d.Window) {
				t.Fatalf("denied at %d: RetryAfter %v beyond reset %v (window %v)", ms, d.RetryAfter, d.ResetAt.UnixMilli(), d.Window)
			}
			if d.Remaining < 0 {
				t.Fatalf("remaining %d < 0", d.Remaining)
			}
			if d.Allowed {
				state = next
			}
		}
	})
}

func BenchmarkDecide(b *testing.B) {
	for _, bc := range []struct {
		name string
		p    *Policy
	}{
		{"windows=1", MustPolicy("b", PerMinute(1<<30))},
		{"windows=2", MustPolicy("b", PerMinute(1<<30), PerSecond(1<<30))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			now := time.Unix(1_785_499_230, 0)
			var st [MaxWindows]State
			for b.Loop() {
				st, _ = Decide(bc.p, st, now, 1)
			}
		})
	}
}

// TestSettled: a decision read as if charged another cost moves every
// window by the difference, keeps its deciding window, clamps Remaining
// at zero in debt, and leaves refusals and uncharged decisions alone.
func TestSettled(t *testing.T) {
	p := MustPolicy("tokens", PerMinute(100), PerHour(1000))
	at := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	var prior [MaxWindows]State
	_, d := Decide(p, prior, at, 60) // 40 of the minute, 940 of the hour left
	tests := []struct {
		name                string
		d                   Decision
		reserved, actual    int64
		remaining           int64
		minute, hour        int64 // WindowAt(i).Used
		sameWindow, changed bool
	}{
		{"less_than_reserved", d, 60, 20, 80, 20, 20, true, true},
		{"more_than_reserved", d, 60, 90, 10, 90, 90, true, true},
		{"into_debt", d, 60, 150, 0, 150, 150, true, true},
		{"as_reserved", d, 60, 60, 40, 60, 60, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Settled(tt.d, tt.reserved, tt.actual)
			if got.Remaining != tt.remaining || got.WindowAt(0).Used != tt.minute || got.WindowAt(1).Used != tt.hour {
				t.Fatalf("Settled(reserved %d, actual %d): remaining %d, used %d and %d; want %d, %d and %d",
					tt.reserved, tt.actual, got.Remaining, got.WindowAt(0).Used, got.WindowAt(1).Used, tt.remaining, tt.minute, tt.hour)
			}
			if got.Window != tt.d.Window || got.Limit != tt.d.Limit || !got.ResetAt.Equal(tt.d.ResetAt) {
				t.Fatalf("the deciding window moved: %+v, from %+v", got, tt.d)
			}
		})
	}
	full, _ := Decide(p, prior, at, 100)
	_, refused := Decide(p, full, at, 1)
	if got := Settled(refused, 1, 0); got != refused {
		t.Fatalf("a refusal changed: %+v", got)
	}
	if got := Settled(Uncharged(d), 60, 0); got.Remaining != d.Remaining {
		t.Fatalf("an uncharged decision changed: %+v", got)
	}
	custom := Decision{Allowed: true, Limit: 10, Remaining: 4}
	if got := Settled(custom, 5, 1); got.Remaining != 8 {
		t.Fatalf("a custom decision: Remaining %d, want 8", got.Remaining)
	}
}
