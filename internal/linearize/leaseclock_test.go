package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestModelLeasesOnRedisClock: with leases on Redis's clock an admission
// may be dated by its replica's estimate of TIME (leaseEarly), each edge
// both ways; Redis's own answers are held to its clock as ever, and a
// decision from a lease counts in the window it was dated in.
func TestModelLeasesOnRedisClock(t *testing.T) {
	sp := redisSpec()
	sp.ServerClock, sp.Lease = true, 2
	// A lease admission called at 1000, returned by 1001.
	lease := func(at int64) Op { return span(allow(0, 1000, 1, true, 1, 1), 1001, at) }
	for _, tc := range []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"dated_leaseEarly_before_its_call", seq(lease(1000 - leaseEarly)), porcupine.Ok},
		{"dated_earlier", seq(lease(1000 - leaseEarly - 1)), porcupine.Illegal},
		{"dated_at_its_return", seq(lease(1001)), porcupine.Ok},
		{"dated_after_its_return", seq(lease(1002)), porcupine.Illegal},
		{"refusal_dated_at_its_call", seq(span(allow(0, 1000, 4, false, 0, 0), 1001, 1000)), porcupine.Ok},
		{"refusal_dated_before_its_call", seq(span(allow(0, 1000, 4, false, 0, 0), 1001, 999)), porcupine.Illegal},
		// Redis's clock (a peek reads it) is never behind a lease's dating.
		{"redis_at_the_leases_dating", seq(lease(1000), span(peek(1, 1000, 1, true, 2, 2), 1002, 1000)), porcupine.Ok},
		{"redis_behind_the_leases_dating", seq(lease(1001), span(peek(1, 1000, 1, true, 2, 2), 1002, 1000)), porcupine.Illegal},
		// Window 0 full: a lease may admit in window 1, dated there.
		{"dated_in_the_next_window", seq(span(allow(1, 900, 3, true, 3, 3), 901, 900), lease(1000)), porcupine.Ok},
		{"dated_in_the_full_window", seq(span(allow(1, 900, 3, true, 3, 3), 901, 900), lease(999)), porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Name: tc.name, Spec: sp, Ops: tc.ops}
			if got := Check(h, 0).Result; got != tc.want {
				t.Fatalf("got %s, want %s\n%s", got, tc.want, h.Explain(Check(h, 0)))
			}
		})
	}
}
