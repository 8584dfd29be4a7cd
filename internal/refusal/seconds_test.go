package refusal

import (
	"math"
	"testing"
	"time"
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
