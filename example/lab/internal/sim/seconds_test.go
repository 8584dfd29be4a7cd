package sim

import (
	"testing"
	"time"
)

func TestParseSeconds(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want time.Duration
		ok   bool
	}{
		{"whole", "3", 3 * time.Second, true},
		{"two_decimals_exact", "0.90", 900 * time.Millisecond, true},
		{"point_one_exact", "1.1", 1100 * time.Millisecond, true},
		{"nanoseconds", "0.000000001", 1, true},
		{"unix_time_with_micros", "1700000000.123456", 1700000000*time.Second + 123456*time.Microsecond, true},
		{"zero", "0", 0, true},
		{"largest", "9000000000", 9000000000 * time.Second, true},
		{"too_large", "9000000001", 0, false},
		{"ten_decimals", "0.1234567891", 0, false},
		{"negative", "-1", 0, false},
		{"plus", "+1", 0, false},
		{"exponent", "1e3", 0, false},
		{"go_duration", "1m5", 0, false},
		{"leading_dot", ".5", 0, false},
		{"trailing_dot", "5.", 0, false},
		{"empty", "", 0, false},
		{"word", "time", 0, false},
		{"two_dots", "1.2.3", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseSeconds(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("parseSeconds(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
}

func TestFormatSeconds(t *testing.T) {
	tests := []struct {
		name string
		in   time.Duration
		want string
	}{
		{"zero", 0, "0.00"},
		{"ninety_hundredths", 900 * time.Millisecond, "0.90"},
		{"millisecond", time.Millisecond, "0.001"},
		{"nanosecond", 1, "0.000000001"},
		{"whole", 12 * time.Second, "12.00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatSeconds(tt.in); got != tt.want {
				t.Errorf("formatSeconds(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzSecondsRoundTrip checks that every instant the lab can write reads
// back exactly, and that whatever parseSeconds accepts is in range.
func FuzzSecondsRoundTrip(f *testing.F) {
	f.Add(int64(900_000_000), "0.90")
	f.Add(int64(1), "1e3")
	f.Add(int64(9_000_000_000_000_000_000), "9000000000.999999999")
	f.Fuzz(func(t *testing.T, ns int64, s string) {
		if ns >= 0 && ns <= maxWholeSeconds*int64(time.Second) {
			d := time.Duration(ns)
			got, err := parseSeconds(formatSeconds(d))
			if err != nil || got != d {
				t.Fatalf("parseSeconds(formatSeconds(%d)) = %v, %v", ns, got, err)
			}
		}
		if d, err := parseSeconds(s); err == nil && (d < 0 || d >= (maxWholeSeconds+1)*time.Second) {
			t.Fatalf("parseSeconds(%q) = %v, out of range", s, d)
		}
	})
}
