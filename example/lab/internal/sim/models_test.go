package sim

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"
)

// decide runs the named model over instants (in ms) of one key and returns
// which were admitted.
func decide(t *testing.T, name string, cfg Config, ms ...int) []bool {
	t.Helper()
	m, err := New(name, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	got := make([]bool, len(ms))
	for i, v := range ms {
		ok, err := m.Allow(context.Background(), "k", time.Duration(v)*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = ok
	}
	return got
}

func TestModels(t *testing.T) {
	three := Config{Limit: 3, Window: time.Second}
	const y, n = true, false
	tests := []struct {
		name  string
		model string
		cfg   Config
		ms    []int
		want  []bool
	}{
		{"none_admits_all", None, three, []int{0, 0, 0, 0, 0}, []bool{y, y, y, y, y}},
		{"fixed_window_resets_on_boundary", FixedWindow, three, []int{990, 991, 992, 993, 1000, 1001, 1002, 1003}, []bool{y, y, y, n, y, y, y, n}},
		{"fixed_window_aligned_to_epoch", FixedWindow, three, []int{1500, 1600, 1700, 1999, 2000}, []bool{y, y, y, n, y}},
		{"sliding_log_waits_a_whole_window", SlidingLog, three, []int{900, 910, 920, 1000, 1899, 1900, 1910, 1919}, []bool{y, y, y, n, n, y, y, n}},
		{"sliding_log_span_is_half_open", SlidingLog, Config{Limit: 1, Window: time.Second}, []int{0, 999, 1000}, []bool{y, n, y}},
		{"token_bucket_full_then_refills", TokenBucket, three, []int{0, 0, 0, 0, 333, 334, 667, 1000}, []bool{y, y, y, n, n, y, y, y}},
		{"token_bucket_capped_at_capacity", TokenBucket, three, []int{0, 10_000, 10_000, 10_000, 10_000}, []bool{y, y, y, y, n}},
		{"layered_short_window_bites", Layered, Config{Limit: 10, Window: time.Second}, []int{0, 1, 2, 199, 200, 201, 202}, []bool{y, y, n, n, y, y, n}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(t, tt.model, tt.cfg, tt.ms...)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s %v at %v ms: got %v, want %v", tt.model, tt.cfg, tt.ms, got, tt.want)
			}
		})
	}
}

func TestModelsKeepKeysApart(t *testing.T) {
	for _, name := range []string{FixedWindow, Layered, SlidingLog, TokenBucket} {
		t.Run(name, func(t *testing.T) {
			m, err := New(name, Config{Limit: 1, Window: time.Second}, 2)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			var got []bool
			for _, key := range []string{"a", "b", "a", "b"} {
				ok, err := m.Allow(context.Background(), key, 0)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ok)
			}
			if want := []bool{true, true, false, false}; !reflect.DeepEqual(got, want) {
				t.Errorf("%s, limit 1, keys a b a b at 0: got %v, want %v", name, got, want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := []struct {
		name  string
		model string
		cfg   Config
		want  string
		is    error
	}{
		{"unknown", "leaky", Config{Limit: 1, Window: time.Second}, `sim: unknown limiter "leaky" (known: none, fixed-window, layered, sliding-log, token-bucket)`, ErrUnknownLimiter},
		{"zero_limit", None, Config{Limit: 0, Window: time.Second}, "sim: invalid configuration: limit 0 must be in [1, 100000]", ErrInvalidConfig},
		{"huge_limit", FixedWindow, Config{Limit: MaxLimit + 1, Window: time.Second}, "sim: invalid configuration: limit 100001 must be in [1, 100000]", ErrInvalidConfig},
		{"sub_millisecond", SlidingLog, Config{Limit: 1, Window: 1500 * time.Microsecond}, "sim: invalid configuration: window 1.5ms is not a whole number of milliseconds", ErrInvalidConfig},
		{"too_long", TokenBucket, Config{Limit: 1, Window: 25 * time.Hour}, "sim: invalid configuration: window 25h0m0s must be in [1ms, 24h0m0s]", ErrInvalidConfig},
		{"layered_odd_window", Layered, Config{Limit: 10, Window: 1001 * time.Millisecond}, "sim: invalid configuration: layered needs a window that splits into 5 whole milliseconds; 1.001s does not (use a multiple of 5ms)", ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.model, tt.cfg, 1)
			if err == nil || err.Error() != tt.want || !errors.Is(err, tt.is) {
				t.Errorf("New(%q, %+v) error = %v, want %q wrapping %v", tt.model, tt.cfg, err, tt.want, tt.is)
			}
		})
	}
}

func TestWorstSpan(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		ts   []time.Duration
		want int
	}{
		{"empty", nil, 0},
		{"one", ms(5), 1},
		{"span_is_half_open", ms(0, 1000), 1},
		{"just_inside", ms(0, 999), 2},
		{"best_span_in_the_middle", ms(0, 1500, 1600, 1700, 2499, 2600), 4},
		{"equal_instants", ms(7, 7, 7), 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := WorstSpan(tt.ts, time.Second); got != tt.want {
				t.Errorf("WorstSpan(%v, 1s) = %d, want %d", tt.ts, got, tt.want)
			}
		})
	}
}

func TestShortDuration(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{time.Second, "1s"}, {time.Minute, "1m"}, {time.Hour, "1h"}, {90 * time.Minute, "1h30m"},
		{150 * time.Second, "2m30s"}, {200 * time.Millisecond, "200ms"}, {10 * time.Second, "10s"}, {24 * time.Hour, "24h"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := ShortDuration(tt.in); got != tt.want {
				t.Errorf("ShortDuration(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
