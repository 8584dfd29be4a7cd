package rank

import (
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

func TestMore(t *testing.T) {
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	d := func(allowed bool, remaining int64, reset time.Duration) limiter.Decision {
		return limiter.Decision{Allowed: allowed, Remaining: remaining, ResetAt: t0.Add(reset)}
	}
	tests := []struct {
		name string
		a, b limiter.Decision
		want bool
	}{
		{"denial_beats_admission", d(false, 5, time.Second), d(true, 0, time.Hour), true},
		{"admission_loses_to_denial", d(true, 0, time.Hour), d(false, 5, time.Second), false},
		{"later_denial_beats_earlier", d(false, 0, time.Hour), d(false, 0, time.Minute), true},
		{"earlier_denial_loses", d(false, 0, time.Minute), d(false, 0, time.Hour), false},
		{"same_reset_denial_less_remaining", d(false, 1, time.Minute), d(false, 3, time.Minute), true},
		{"less_remaining_admission_wins", d(true, 1, time.Second), d(true, 2, time.Hour), true},
		{"more_remaining_admission_loses", d(true, 2, time.Hour), d(true, 1, time.Second), false},
		{"equal_remaining_later_reset_wins", d(true, 1, time.Hour), d(true, 1, time.Minute), true},
		{"identical_is_not_more", d(true, 1, time.Minute), d(true, 1, time.Minute), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := More(&tt.a, &tt.b); got != tt.want {
				t.Errorf("More(%+v, %+v) = %v, want %v", tt.a, tt.b, got, tt.want)
			}
		})
	}
}
