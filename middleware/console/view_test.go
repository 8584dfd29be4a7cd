package console

import (
	"testing"
	"time"
)

func TestSpan(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"past", -time.Second, "0s"},
		{"zero", 0, "0s"},
		{"part_of_a_second_rounds_up", 200 * time.Millisecond, "1s"},
		{"seconds", 45 * time.Second, "45s"},
		{"minutes_and_seconds", 4*time.Minute + 10*time.Second, "4m 10s"},
		{"whole_minutes", 5 * time.Minute, "5m"},
		{"hours_and_minutes", 3*time.Hour + 20*time.Minute + 59*time.Second, "3h 20m"},
		{"hours_no_minutes", 3*time.Hour + 5*time.Second, "3h"},
		{"days_and_hours", 27*24*time.Hour + 4*time.Hour + 30*time.Minute, "27d 4h"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := span(tc.d); got != tc.want {
				t.Fatalf("span(%v) = %q, want %q", tc.d, got, tc.want)
			}
		})
	}
}
