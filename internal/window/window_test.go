package window

import (
	"testing"
	"time"
)

func TestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name              string
		ms, windowMs      int64
		wantID, wantStart int64
		wantEnd           int64
	}{
		{"epoch", 0, 1000, 0, 0, 1000},
		{"inside_first", 999, 1000, 0, 0, 1000},
		{"second_window", 1000, 1000, 1, 1000, 2000},
		{"just_before_epoch", -1, 1000, -1, -1000, 0},
		{"one_window_before_epoch", -1000, 1000, -1, -1000, 0},
		{"just_past_one_before", -1001, 1000, -2, -2000, -1000},
		{"minute_2026", time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC).UnixMilli(), 60000,
			time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC).UnixMilli() / 60000,
			time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC).UnixMilli(),
			time.Date(2026, 7, 31, 12, 1, 0, 0, time.UTC).UnixMilli()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, start, end := ID(tt.ms, tt.windowMs)
			if id != tt.wantID || start != tt.wantStart || end != tt.wantEnd {
				t.Errorf("ID(%d, %d) = (%d, %d, %d), want (%d, %d, %d)",
					tt.ms, tt.windowMs, id, start, end, tt.wantID, tt.wantStart, tt.wantEnd)
			}
		})
	}
}

// TestIDMonotonicAcrossEpoch checks that ids never decrease as time
// moves forward through 1970, where truncating division would repeat id 0.
func TestIDMonotonicAcrossEpoch(t *testing.T) {
	t.Parallel()
	prev, _, _ := ID(-5000, 1000)
	for ms := int64(-5000); ms <= 5000; ms++ {
		id, start, end := ID(ms, 1000)
		if id < prev || id > prev+1 {
			t.Fatalf("ID(%d) = %d after %d", ms, id, prev)
		}
		if ms < start || ms >= end {
			t.Fatalf("ID(%d): instant outside [%d, %d)", ms, start, end)
		}
		prev = id
	}
}
