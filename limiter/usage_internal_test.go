package limiter

import (
	"testing"
	"time"
)

// Decision.usage (Limiter.Usage's) describes the windows as the decision left them, for a
// handler that has DecisionFrom's decision; a custom decision describes
// its one window.
func TestDecisionUsage(t *testing.T) {
	t.Parallel()
	p := MustPolicy("api", PerHour(100), PerMinute(10))
	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	_, d := Decide(p, [MaxWindows]State{{Window: 0, Count: 0}}, at, 4)
	u := d.usage()
	if len(u.Windows) != 2 || u.Windows[0].Used != 4 || u.Windows[0].Remaining != 96 || u.Windows[1].Used != 4 || u.Windows[1].Remaining != 6 {
		t.Fatalf("usage of an admission of 4: %+v", u.Windows)
	}
	custom := Decision{Allowed: true, Limit: 50, Remaining: 20, Window: time.Minute, ResetAt: at.Add(time.Minute), Policy: p}
	if u := custom.usage(); len(u.Windows) != 1 || u.Windows[0].Used != 30 || u.Windows[0].Remaining != 20 || !u.Windows[0].ResetAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("a custom decision's usage: %+v", u.Windows)
	}
}
