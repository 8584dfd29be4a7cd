package refusal

import (
	"math"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

func TestRetryAfterSeconds(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want int64
	}{
		{"29.5s_rounds_up_to_30", 29500 * time.Millisecond, 30},
		{"exactly_30s_is_30", 30 * time.Second, 30},
		{"30s_and_1ns_is_31", 30*time.Second + 1, 31},
		{"1ms_is_1", time.Millisecond, 1},
		{"1ns_is_1", 1, 1},
		{"exactly_1s_is_1", time.Second, 1},
		{"1s_and_1ms_is_2", time.Second + time.Millisecond, 2},
		{"zero_is_1", 0, 1},
		{"negative_is_1", -5 * time.Second, 1},
		{"one_hour", time.Hour, 3600},
		{"max_duration", math.MaxInt64, int64(time.Duration(math.MaxInt64)/time.Second) + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Seconds(tt.in); got != tt.want {
				t.Fatalf("Seconds(%v) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestUnixCeil(t *testing.T) {
	tests := []struct {
		name string
		in   time.Time
		want int64
	}{
		{"whole_second", time.Unix(1000, 0), 1000},
		{"half_second_rounds_up", time.Unix(1000, 500_000_000), 1001},
		{"before_epoch_half", time.Unix(-1, 500_000_000), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnixCeil(tt.in); got != tt.want {
				t.Fatalf("UnixCeil(%v) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}

// TestSubSecond: a refusal by a window under a second has its exact wait
// in milliseconds, rounded up, at least 1; any other decision has none.
func TestSubSecond(t *testing.T) {
	for _, tt := range []struct {
		name string
		d    *limiter.Decision
		ms   int64
		ok   bool
	}{
		{"70ms_of_100ms", &limiter.Decision{Window: 100 * time.Millisecond, RetryAfter: 70 * time.Millisecond}, 70, true},
		{"rounded_up", &limiter.Decision{Window: 100 * time.Millisecond, RetryAfter: 70*time.Millisecond + 1}, 71, true},
		{"at_least_1ms", &limiter.Decision{Window: 10 * time.Millisecond, RetryAfter: 0}, 1, true},
		{"a_second", &limiter.Decision{Window: time.Second, RetryAfter: 500 * time.Millisecond}, 0, false},
		{"admitted", &limiter.Decision{Allowed: true, Window: 100 * time.Millisecond}, 0, false},
		{"never", &limiter.Decision{Window: 100 * time.Millisecond, CostExceedsLimit: true}, 0, false},
		{"calendar", &limiter.Decision{RetryAfter: time.Hour}, 0, false},
		{"nil", nil, 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if ms, ok := SubSecond(tt.d); ms != tt.ms || ok != tt.ok {
				t.Fatalf("SubSecond = %d, %v; want %d, %v", ms, ok, tt.ms, tt.ok)
			}
		})
	}
}
