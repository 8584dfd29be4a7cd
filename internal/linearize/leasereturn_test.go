package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestModelReturnsToAnOldLease: a return (a refund, a settle below its
// reservation) of units a replica spent from a lease granted before
// another replica's Reset may go back to that lease, not to Redis
// (redisstore's leases.refund), to be spent again: an admission may
// then take from the lease what the return gave it. The bound holds: what
// the replica spends of it, net of returns, is never more than Lease.
func TestModelReturnsToAnOldLease(t *testing.T) {
	sp := redisSpec()
	sp.Limits[1] = 10 // 3 a second, 10 every 4 s
	sp.Lease, sp.Replicas = 3, 3
	// Replica 1 resets and fills the fresh budget (3 per second);
	// replica 0 spends 1 of its old lease.
	filled := []Op{reset(1, 200), allow(1, 205, 3, true, 3, 3), allow(0, 210, 1, true, 9, 9)}
	with := func(ops ...Op) []Op { return seq(append(append([]Op{}, filled...), ops...)...) }
	for _, tc := range []struct {
		name string
		ops  []Op
		want porcupine.CheckResult
	}{
		{"spent_returned_spent_again", with(refund(0, 220, 210, 1), allow(0, 230, 3, true, 9, 9)), porcupine.Ok},
		{"settled_below_spent_again", with(reserve(0, 215, 1, true, 9, 9), settle(0, 220, 215, 1, 0),
			allow(0, 230, 2, true, 9, 9)), porcupine.Ok},
		{"spent_past_the_lease_net_of_returns", with(refund(0, 220, 210, 1), allow(0, 230, 3, true, 9, 9),
			allow(0, 240, 1, true, 9, 9)), porcupine.Illegal},
		{"no_return_spent_past_the_lease", with(allow(0, 230, 3, true, 9, 9)), porcupine.Illegal},
		// What the fresh budget admitted goes back to Redis, not to a lease.
		{"fresh_charge_returned_to_redis", seq(reset(1, 200), allow(0, 205, 1, true, 1, 1), refund(0, 220, 205, 1),
			peek(1, 230, 1, true, 1, 1)), porcupine.Ok},
		{"fresh_charge_returned_to_a_whole_lease", seq(reset(1, 200), allow(0, 205, 1, true, 1, 1), allow(1, 206, 2, true, 3, 3),
			refund(0, 220, 205, 1), allow(0, 230, 3, true, 9, 9), allow(0, 240, 2, true, 9, 9)), porcupine.Illegal},
		// Nor does it go back to a lease that spent nothing in the
		// charge's windows: replica 0 spent 2 of its old lease in second
		// 0, Redis admitted 2 in second 1 (more than the lease's 1 left),
		// of which a refund gives 1 back to Redis, and the last admission
		// finds second 1 full but for that unit, and 1 left of the lease.
		{"refund_of_a_charge_in_another_window", seq(reset(1, 200), allow(1, 205, 3, true, 3, 3),
			allow(0, 210, 2, true, 9, 9), allow(0, 1100, 2, true, 2, 5), allow(1, 1110, 1, true, 3, 6),
			refund(0, 1150, 1100, 1), allow(0, 1200, 2, true, 9, 9)), porcupine.Illegal},
		// Nor after the charge's windows: the lease spans them only
		// (leases.refund); replica 0 spent its whole old lease in second
		// 0, its refund comes in second 1, whose window replica 1 filled.
		{"refund_after_the_charges_window", seq(reset(1, 200), allow(1, 205, 3, true, 3, 3),
			allow(0, 210, 3, true, 9, 9), allow(1, 1100, 3, true, 3, 6), refund(0, 1150, 210, 1),
			allow(0, 1200, 1, true, 9, 9)), porcupine.Illegal},
		// A return never fills a lease past Lease: replica 2's spending
		// leaves extra in the window, replica 0's lease is whole, and
		// its refund of a charge before the Reset returns nothing.
		{"refund_into_a_whole_lease", seq(allow(0, 100, 1, true, 1, 1), reset(1, 200), allow(1, 205, 3, true, 3, 3),
			allow(2, 210, 1, true, 9, 9), refund(0, 220, 100, 1), allow(0, 230, 3, true, 9, 9), allow(0, 240, 1, true, 9, 9)),
			porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Name: tc.name, Spec: sp, Ops: tc.ops}
			if got := Check(h, 0).Result; got != tc.want {
				t.Fatalf("got %s, want %s\n%s", got, tc.want, h.Explain(Check(h, 0)))
			}
		})
	}
}

func reserve(r int, at, cost int64, ok bool, used ...int64) Op {
	op := allow(r, at, cost, ok, used...)
	op.In.Kind = Reserve
	return op
}
