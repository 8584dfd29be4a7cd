package linearize

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// seq builds a history of operations one after another, each returning
// before the next is called (unless it failed: it never returns).
func seq(ops ...Op) []Op {
	for i := range ops {
		ops[i].Call = int64(10 * i)
		if ops[i].Out.Unknown {
			ops[i].Return = Never
		} else {
			ops[i].Return = int64(10*i + 5)
		}
		ops[i].Client = ops[i].In.Replica
	}
	return ops
}

func allow(r int, at, cost int64, ok bool, used ...int64) Op {
	return Op{In: Input{Kind: Allow, Replica: r, Key: "k", Cost: cost, At: at}, Out: Output{Allowed: ok, Used: used, At: at}}
}

func peek(r int, at, cost int64, ok bool, used ...int64) Op {
	op := allow(r, at, cost, ok, used...)
	op.In.Kind = Peek
	return op
}

func failed(op Op) Op {
	op.Out = Output{Unknown: true}
	return op
}

func settle(r int, at, charged, reserved, actual int64) Op {
	return Op{In: Input{Kind: Settle, Replica: r, Key: "k", Cost: reserved, Actual: actual, At: at, Charged: charged}}
}

func refund(r int, at, charged, cost int64) Op {
	return Op{In: Input{Kind: Refund, Replica: r, Key: "k", Cost: cost, At: at, Charged: charged}}
}

func reset(r int, at int64) Op { return Op{In: Input{Kind: Reset, Replica: r, Key: "k", At: at}} }

func acquire(r, token int, ok bool, held int64) Op {
	return Op{In: Input{Kind: Acquire, Replica: r, Key: "k", Token: token}, Out: Output{Allowed: ok, Used: []int64{held}}}
}

func release(r, token int) Op {
	return Op{In: Input{Kind: Release, Replica: r, Key: "k", Token: token}}
}

// redisSpec is 3 per second and 5 per 4 s, on Redis, in-flight cap 2.
func redisSpec() Spec {
	return Spec{Windows: []int64{1000, 4000}, Limits: []int64{3, 5}, Slots: 2, Store: "redis", Replicas: 2}
}

// TestModel: the model explains what the policy's rule gives, and no
// more; each local state's bound, exactly.
func TestModel(t *testing.T) {
	cached := redisSpec()
	cached.Stale = maxLocalAge
	leased := redisSpec()
	leased.Lease = 2
	leasedWide := leased // room for a lease's units under the limit
	leasedWide.Limits = []int64{10, 20}
	memory := redisSpec()
	memory.Store = "memory"
	server := redisSpec()
	server.ServerClock = true
	for _, tc := range []struct {
		name string
		spec Spec
		ops  []Op
		want porcupine.CheckResult
	}{
		{"within_the_limit_then_refused", redisSpec(), seq(
			allow(0, 100, 2, true, 2, 2), allow(1, 200, 1, true, 3, 3), allow(0, 300, 1, false, 3, 3)), porcupine.Ok},
		{"admitted_past_the_limit", redisSpec(), seq(
			allow(0, 100, 2, true, 2, 2), allow(1, 200, 2, true, 4, 4)), porcupine.Illegal},
		{"count_off_by_one", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 1, true, 3, 3)), porcupine.Illegal},
		{"next_window_starts_again", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), allow(1, 1100, 2, true, 2, 5), allow(1, 1200, 1, false, 2, 5)), porcupine.Ok},
		{"failed_decision_charged", redisSpec(), seq(
			failed(allow(0, 100, 2, true)), allow(1, 200, 2, false, 2, 2)), porcupine.Ok},
		{"failed_decision_not_charged", redisSpec(), seq(
			failed(allow(0, 100, 2, true)), allow(1, 200, 2, true, 2, 2)), porcupine.Ok},
		{"failed_decision_charged_twice", redisSpec(), seq(
			failed(allow(0, 100, 2, true)), peek(1, 200, 1, false, 4, 4)), porcupine.Illegal},
		{"settle_into_debt_refuses", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), settle(0, 200, 100, 1, 4), allow(1, 300, 1, false, 4, 4),
			allow(1, 1100, 1, true, 1, 5)), porcupine.Ok},
		{"settle_applied_twice", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), settle(0, 200, 100, 1, 2), peek(1, 300, 1, false, 3, 3)), porcupine.Illegal},
		{"settle_returns_to_its_window_only", redisSpec(), seq(
			allow(0, 900, 3, true, 3, 3), settle(0, 1100, 900, 3, 1), peek(1, 1200, 1, true, 1, 2)), porcupine.Ok},
		{"reset_forgets", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), reset(1, 200), allow(0, 300, 3, true, 3, 3)), porcupine.Ok},
		{"refund_after_reset_returns_nothing", redisSpec(), seq(
			allow(0, 100, 2, true, 2, 2), reset(1, 200), allow(1, 300, 2, true, 2, 2), refund(0, 400, 100, 2),
			allow(1, 500, 1, true, 3, 3)), porcupine.Ok},
		{"refund_after_reset_gives_to_the_fresh_budget", redisSpec(), seq(
			allow(0, 100, 2, true, 2, 2), reset(1, 200), allow(1, 300, 2, true, 2, 2), refund(0, 400, 100, 2),
			allow(1, 500, 1, true, 1, 1)), porcupine.Illegal},
		{"settle_after_reset_returns_nothing", memory, seq(
			allow(0, 100, 3, true, 3, 3), reset(0, 200), allow(0, 300, 1, true, 1, 1), settle(0, 400, 100, 3, 1),
			peek(0, 500, 1, true, 2, 2)), porcupine.Ok},
		{"settle_after_reset_gives_to_the_fresh_budget", memory, seq(
			allow(0, 100, 3, true, 3, 3), reset(0, 200), allow(0, 300, 1, true, 1, 1), settle(0, 400, 100, 3, 1),
			peek(0, 500, 1, true, 1, 1)), porcupine.Illegal},
		{"charge_in_the_resets_millisecond_returns_nothing", redisSpec(), seq(
			reset(1, 200), allow(0, 200, 2, true, 2, 2), refund(0, 300, 200, 2), peek(1, 400, 1, true, 3, 3)), porcupine.Ok},
		{"charge_in_the_resets_millisecond_returned", redisSpec(), seq(
			reset(1, 200), allow(0, 200, 2, true, 2, 2), refund(0, 300, 200, 2), peek(1, 400, 1, true, 1, 1)), porcupine.Illegal},
		{"charge_after_reset_returns", redisSpec(), seq(
			reset(1, 200), allow(0, 201, 2, true, 2, 2), refund(0, 300, 201, 2), peek(1, 400, 1, true, 1, 1)), porcupine.Ok},
		{"charge_after_reset_kept", redisSpec(), seq(
			reset(1, 200), allow(0, 201, 2, true, 2, 2), refund(0, 300, 201, 2), peek(1, 400, 1, true, 3, 3)), porcupine.Illegal},
		{"reset_behind_another_leaves_the_mark", redisSpec(), seq(
			reset(1, 300), reset(0, 200), allow(0, 250, 2, true, 2, 2), refund(0, 260, 250, 2), peek(1, 400, 1, true, 3, 3)), porcupine.Ok},
		{"server_clock_reset_after_the_charge", server, seq(
			span(reset(1, 100), 300, 0), span(allow(0, 100, 2, true, 2, 2), 400, 200), span(refund(0, 100, 200, 2), 500, 300),
			span(peek(1, 100, 1, true, 3, 3), 600, 400)), porcupine.Ok},
		{"server_clock_reset_before_the_charge", server, seq(
			span(reset(1, 100), 300, 0), span(allow(0, 100, 2, true, 2, 2), 400, 200), span(refund(0, 100, 200, 2), 500, 300),
			span(peek(1, 100, 1, true, 1, 1), 600, 400)), porcupine.Ok},
		{"server_clock_reset_before_its_next_decision", server, seq(
			span(reset(1, 100), 300, 0), span(allow(0, 100, 2, true, 2, 2), 400, 150), span(allow(0, 100, 1, true, 3, 3), 400, 200),
			span(refund(0, 100, 200, 1), 500, 300), span(peek(1, 100, 1, true, 3, 3), 600, 400)), porcupine.Ok},
		{"server_clock_reset_after_its_next_decision", server, seq(
			span(reset(1, 100), 300, 0), span(allow(0, 100, 2, true, 2, 2), 400, 150), span(allow(0, 100, 1, true, 3, 3), 400, 200),
			span(refund(0, 100, 200, 1), 500, 300), span(peek(1, 100, 1, true, 4, 4), 600, 400)), porcupine.Illegal},
		// The strict model: each of these passed a lenient variant of it
		// (issue 46), and must not.
		{"refused_with_room", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 1, false, 1, 1)), porcupine.Illegal},
		{"refused_with_room_on_a_fresh_key", redisSpec(), seq(
			allow(0, 100, 3, false, 0, 0)), porcupine.Illegal},
		{"refused_the_last_unit", redisSpec(), seq(
			allow(0, 100, 2, true, 2, 2), allow(1, 200, 1, false, 2, 2)), porcupine.Illegal},
		{"memory_refused_the_last_unit", memory, seq(
			allow(0, 100, 2, true, 2, 2), allow(0, 200, 1, false, 2, 2)), porcupine.Illegal},
		{"server_clock_refused_with_room", server, seq(
			span(allow(0, 100, 2, true, 2, 2), 300, 200), span(allow(1, 100, 1, false, 2, 2), 500, 400)), porcupine.Illegal},
		{"peek_refused_with_room", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), peek(1, 200, 2, false, 1, 1)), porcupine.Illegal},
		{"long_window_full", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), allow(0, 1100, 2, true, 2, 5), allow(1, 2100, 1, false, 0, 5)), porcupine.Ok},
		{"long_window_one_over", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), allow(0, 1100, 2, true, 2, 5), allow(1, 2100, 1, true, 1, 6)), porcupine.Illegal},
		{"long_window_one_over_in_one_step", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), allow(0, 1100, 3, true, 3, 6)), porcupine.Illegal},
		{"refund_once", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 2, true, 3, 3), refund(0, 300, 100, 1),
			peek(1, 400, 1, true, 3, 3)), porcupine.Ok},
		{"refund_applied_twice", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 2, true, 3, 3), refund(0, 300, 100, 1),
			peek(1, 400, 1, true, 2, 2)), porcupine.Illegal},
		{"failed_refund_applied_twice", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 2, true, 3, 3), failed(refund(0, 300, 100, 1)),
			peek(1, 400, 1, true, 2, 2)), porcupine.Illegal},
		{"failed_refund_applied_once", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 200, 2, true, 3, 3), failed(refund(0, 300, 100, 1)),
			peek(1, 400, 1, true, 3, 3)), porcupine.Ok},
		{"settle_past_its_reservation", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), settle(0, 200, 100, 1, 3), peek(1, 300, 1, false, 3, 3)), porcupine.Ok},
		{"settle_past_its_reservation_one_short", redisSpec(), seq(
			allow(0, 100, 1, true, 1, 1), settle(0, 200, 100, 1, 3), peek(1, 300, 1, true, 3, 3)), porcupine.Illegal},
		{"settle_below_its_reservation", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), settle(0, 200, 100, 3, 1), peek(1, 300, 1, true, 2, 2)), porcupine.Ok},
		{"settle_below_its_reservation_one_short", redisSpec(), seq(
			allow(0, 100, 3, true, 3, 3), settle(0, 200, 100, 3, 1), peek(1, 300, 1, true, 3, 3)), porcupine.Illegal},
		{"memory_settle_one_short", memory, seq(
			allow(0, 100, 1, true, 1, 1), settle(0, 200, 100, 1, 3), peek(0, 300, 1, true, 3, 3)), porcupine.Illegal},
		{"slots", redisSpec(), seq(
			acquire(0, 1, true, 1), acquire(1, 2, true, 2), acquire(1, 3, false, 2), release(0, 1),
			acquire(1, 4, true, 2)), porcupine.Ok},
		{"slot_past_the_cap", redisSpec(), seq(
			acquire(0, 1, true, 1), acquire(1, 2, true, 2), acquire(1, 3, true, 3)), porcupine.Illegal},
		{"cache_refuses_within_a_second", cached, seq(
			allow(0, 100, 3, true, 3, 3), reset(1, 200), allow(0, 300, 1, false, 3, 3)), porcupine.Ok},
		{"cache_refuses_in_the_longer_window", cached, seq(
			allow(0, 100, 3, true, 3, 3), allow(0, 1100, 2, true, 2, 5), reset(1, 1200),
			allow(0, 2050, 1, false, 0, 5)), porcupine.Ok},
		{"cache_refuses_a_second_late", cached, seq(
			allow(0, 100, 3, true, 3, 3), allow(0, 1100, 2, true, 2, 5), reset(1, 1200),
			allow(0, 2150, 1, false, 0, 5)), porcupine.Illegal},
		{"cache_of_another_replica", cached, seq(
			allow(0, 100, 3, true, 3, 3), reset(1, 200), allow(1, 300, 1, false, 3, 3)), porcupine.Illegal},
		{"own_reset_clears_the_cache", cached, seq(
			allow(0, 100, 3, true, 3, 3), reset(0, 200), allow(0, 300, 1, false, 3, 3)), porcupine.Illegal},
		{"lease_within_the_limit", leased, seq(
			allow(0, 100, 1, true, 1, 1), allow(0, 110, 1, true, 9, 9), allow(1, 120, 1, false, 3, 3),
			allow(0, 130, 1, true, 9, 9)), porcupine.Ok},
		{"lease_past_the_limit", leased, seq(
			allow(0, 100, 2, true, 2, 2), allow(0, 110, 1, true, 9, 9), allow(1, 120, 1, true, 9, 9)), porcupine.Illegal},
		{"old_lease_of_another_replica_after_its_settle", leased, seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 110, 1, true, 9, 9), settle(0, 120, 100, 1, 3),
			allow(1, 130, 1, true, 9, 9)), porcupine.Ok},
		{"own_lease_after_own_settle_into_debt", leased, seq(
			allow(0, 100, 1, true, 1, 1), allow(0, 110, 1, true, 9, 9), settle(0, 120, 100, 1, 3),
			allow(0, 130, 1, true, 9, 9)), porcupine.Illegal},
		{"old_lease_after_reset_then_limit", leased, seq(
			allow(0, 100, 3, true, 3, 3), reset(1, 200), allow(0, 210, 1, true, 9, 9), allow(1, 220, 3, true, 3, 3)), porcupine.Ok},
		{"reset_gives_leased_units_back", leased, seq(
			allow(0, 100, 3, true, 3, 3), reset(1, 200), allow(1, 220, 3, true, 3, 3),
			peek(1, 1300, 1, true, 2, 2)), porcupine.Illegal},
		{"lease_charged_past_the_limit", leased, seq(
			allow(0, 100, 3, true, 3, 3), peek(1, 110, 1, false, 4, 4)), porcupine.Illegal},
		{"settled_past_the_limit_with_leases", leased, seq(
			allow(0, 100, 3, true, 3, 3), settle(0, 110, 100, 3, 4), peek(1, 120, 1, false, 4, 4)), porcupine.Ok},
		// A refusal, or a peek, shows what Redis holds: what it admitted
		// since the key's latest Reset and at most a lease per admission
		// since (spec.lends), not a count the Reset left.
		{"lease_refusal_by_a_window_the_reset_left", leased, seq(
			allow(0, 100, 3, true, 3, 3), allow(1, 1100, 2, true, 2, 5), reset(1, 1200),
			allow(0, 1210, 1, false, 0, 5)), porcupine.Illegal},
		{"lease_peek_of_a_window_the_reset_left", leased, seq(
			allow(0, 100, 3, true, 3, 3), allow(1, 1100, 2, true, 2, 5), reset(1, 1200),
			peek(0, 1210, 1, false, 0, 5)), porcupine.Illegal},
		{"lease_refusal_by_units_leased_since_a_reset", leased, seq(
			allow(0, 100, 3, true, 3, 3), allow(1, 1100, 2, true, 2, 5), reset(1, 1200),
			allow(0, 1210, 1, true, 1, 1), allow(1, 1220, 1, false, 3, 3)), porcupine.Ok},
		{"lease_refusal_past_the_units_leased_since_a_reset", leased, seq(
			allow(0, 100, 3, true, 3, 3), allow(1, 1100, 2, true, 2, 5), reset(1, 1200),
			allow(0, 1210, 1, true, 1, 1), allow(1, 1220, 1, false, 3, 4)), porcupine.Illegal},
		// A failed admission that Redis may have made may have come with
		// a lease, though the counts spent from old leases (which Redis
		// never held) left no room by the plain rule.
		{"failed_admission_after_old_lease_lends", leasedWide, seq(
			reset(1, 200), allow(0, 210, 2, true, 9, 9), peek(1, 215, 1, true, 1, 1),
			failed(allow(1, 230, 9, true, 9, 9)), peek(1, 240, 1, false, 10, 10)), porcupine.Ok},
		{"lease_refusal_past_the_units_leased", leased, seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 110, 1, false, 3, 4)), porcupine.Illegal},
		{"lease_refusal_by_the_units_leased", leased, seq(
			allow(0, 100, 1, true, 1, 1), allow(1, 110, 1, false, 3, 3)), porcupine.Ok},
		// A unit refunded into a lease stays in Redis: replica 0 spent
		// two units of a lease granted before replica 1's Reset, then
		// took back the refund of one Redis charged since.
		{"lease_refund_into_a_lease_granted_before_a_reset", leasedWide, seq(
			allow(0, 100, 1, true, 1, 1), allow(0, 110, 1, true, 2, 2), allow(0, 120, 1, true, 3, 3),
			reset(1, 200), allow(0, 210, 2, true, 2, 2), refund(0, 220, 210, 2), peek(1, 230, 1, true, 3, 3)), porcupine.Ok},
		{"memory_window_left_and_back", memory, seq(
			allow(0, 100, 2, true, 2, 2), epoch(allow(0, 200, 2, true, 2, 2), 1)), porcupine.Ok},
		{"memory_without_step_back", memory, seq(
			allow(0, 100, 2, true, 2, 2), allow(0, 200, 2, true, 2, 2)), porcupine.Illegal},
		{"memory_decided_at_the_table_ahead", memory, seq(
			allow(0, 1100, 1, true, 1, 1), decidedAt(epoch(allow(0, 900, 1, true, 2, 2), 1), 1000)), porcupine.Ok},
		{"server_clock_moves_on", server, seq(
			span(allow(0, 100, 3, true, 3, 3), 1500, 950), span(allow(1, 100, 1, true, 1, 4), 1500, 1010)), porcupine.Ok},
		{"server_clock_never_back", server, seq(
			span(allow(0, 100, 3, true, 3, 3), 1500, 1010), span(allow(1, 100, 1, false, 3, 3), 1500, 950)), porcupine.Illegal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &History{Name: tc.name, Spec: tc.spec, Ops: tc.ops}
			if got := Check(h, 0).Result; got != tc.want {
				t.Fatalf("got %s, want %s\n%s", got, tc.want, h.Explain(Check(h, 0)))
			}
		})
	}
}

func epoch(op Op, e int) Op { op.In.Epoch = e; return op }

func decidedAt(op Op, at int64) Op { op.Out.At = at; return op }

// span gives op, on Redis's clock, the instants [At, hi] and the one it
// was decided at.
func span(op Op, hi, at int64) Op {
	op.In.AtHi = hi
	op.Out.At = at
	return op
}
