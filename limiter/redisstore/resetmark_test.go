package redisstore

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// fakeMonos gives each store a monotonic clock of the test's (fakeMono)
// and returns the function that moves them all.
func fakeMonos(stores []*Store) func(time.Duration) {
	var monos []*atomic.Int64
	for _, s := range stores {
		monos = append(monos, fakeMono(s))
	}
	return func(d time.Duration) {
		for _, m := range monos {
			m.Add(int64(d))
		}
	}
}

// spendRoundRobin asks the replicas in turn, the clock 5 ms further
// each time (hot keys lease), until each has refused refusals times in
// a row, and returns how many were admitted.
func (rs *replicaSet) spendRoundRobin(t *testing.T, key string, refusals int) int64 {
	t.Helper()
	var admitted int64
	streak := make([]int, len(rs.ls))
	for i := 0; ; i++ {
		r := i % len(rs.ls)
		d, err := rs.ls[r].Allow(context.Background(), key, 1)
		if err != nil {
			t.Fatal(err)
		}
		rs.clk.Advance(5 * time.Millisecond)
		if d.Allowed {
			admitted++
			clear(streak)
			continue
		}
		streak[r]++
		done := true
		for _, n := range streak {
			done = done && n >= refusals
		}
		if done {
			return admitted
		}
	}
}

// admitThenReset admits cost on a, resets the key on b, and moves the
// clocks past the Reset's millisecond (Redis's TIME too, on its clock),
// so that what follows is decided after the Reset. It returns the
// admission.
func (rs *replicaSet) admitThenReset(t *testing.T, a, b *limiter.Limiter, cost int64, clock clockSource) limiter.Decision {
	t.Helper()
	ctx := context.Background()
	before, err := a.Allow(ctx, "acme", cost)
	if err != nil || !before.Allowed {
		t.Fatalf("before the Reset: %+v, %v", before, err)
	}
	rs.clk.Advance(time.Millisecond)
	if err := b.Reset(ctx, "acme"); err != nil {
		t.Fatal(err)
	}
	rs.clk.Advance(time.Millisecond)
	if clock == serverClock {
		time.Sleep(2 * time.Millisecond) // Redis's TIME must pass the Reset's millisecond
	}
	return before
}

// TestResetStartsOneFreshBudget: three replicas with leases spend a day
// of 400, one of them holding units leased and unspent; a Reset on
// another starts exactly one fresh budget. What the lease held before
// the Reset never comes back into the new count, so the replicas admit
// exactly 400 in the rest of the day (before issue 36 they admitted 400
// plus the units the lease gave back). Both clocks.
func TestResetStartsOneFreshBudget(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			ctx := context.Background()
			p := limiter.MustPolicy("plan", limiter.PerDayIn(400, time.UTC))
			rs := newReplicaSet(t, 3, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
				WithLeases(500*time.Millisecond, 10), withClockSource(clock))
			advance := fakeMonos(rs.stores)
			if clock == serverClock {
				awaitServerWindow(t, sharedClient(t), time.Second) // the day's end is hours away
			}
			a := rs.ls[0]
			hot(t, a, rs.clk, 20)
			held := rs.stores[0].leases.held(p, "acme")
			if held == 0 {
				t.Fatal("A holds no lease: the test needs one")
			}
			// B and C spend the rest; A holds its units, unspent.
			others := &replicaSet{ls: rs.ls[1:], stores: rs.stores[1:], clk: rs.clk}
			spent := 20 + others.spendRoundRobin(t, "acme", 3)
			if spent+held != 400 {
				t.Fatalf("before the Reset: %d admitted and %d held by A, want 400 in all", spent, held)
			}
			if err := rs.ls[2].Reset(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
			// B spends from the fresh budget; A's lease ends, and its
			// next request finds the units it held, leased before the
			// Reset: they are not given back into B's count.
			rs.clk.Advance(maxLocalAge)
			advance(maxLocalAge)
			hot(t, rs.ls[1], rs.clk, 30)
			after := 30 + rs.spendRoundRobin(t, "acme", 3)
			if after != 400 {
				t.Fatalf("after the Reset the replicas admitted %d, want exactly 400: one fresh budget", after)
			}
			if got := rs.stores[0].Stats().GivenBack; got != 0 {
				t.Errorf("A gave back %d units leased before the Reset, want 0", got)
			}
		})
	}
}

// TestReturnsAfterAResetReturnNothing: a refund, or a settle below its
// reservation, of a request admitted before a Reset returns nothing to
// the fresh count: its units were counted in the budget the Reset ended.
// A request admitted after the Reset is refunded as ever. Both clocks.
func TestReturnsAfterAResetReturnNothing(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, how := range []string{"refund", "settle"} {
			t.Run(clock.String()+"/"+how, func(t *testing.T) {
				ctx := context.Background()
				p := limiter.MustPolicy("plan", limiter.PerHour(10))
				rs := newReplicaSet(t, 2, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
					withClockSource(clock))
				if clock == serverClock {
					awaitServerWindow(t, sharedClient(t), time.Hour)
				}
				a, b := rs.ls[0], rs.ls[1]
				before := rs.admitThenReset(t, a, b, 3, clock)
				fresh, err := a.Allow(ctx, "acme", 2)
				if err != nil || !fresh.Allowed {
					t.Fatalf("after the Reset: %+v, %v", fresh, err)
				}
				returned := func(d limiter.Decision, cost int64) {
					t.Helper()
					var err error
					if how == "refund" {
						err = a.Refund(ctx, "acme", cost, d)
					} else {
						err = a.Settle(ctx, "acme", cost, 0, d)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				returned(before, 3)
				if u, _ := b.Usage(ctx, "acme"); u.Windows[0].Used != 2 {
					t.Fatalf("after a %s of a request admitted before the Reset: %d used, want 2: nothing returned", how, u.Windows[0].Used)
				}
				returned(fresh, 2)
				if u, _ := b.Usage(ctx, "acme"); u.Windows[0].Used != 0 {
					t.Fatalf("after a %s of a request admitted after the Reset: %d used, want 0", how, u.Windows[0].Used)
				}
			})
		}
	}
}

// TestSettleIntoDebtDropsTheLease: the replica whose settle takes a key
// into debt stops deciding from its own lease at once (before issue 36
// it admitted 5 of 5 from it), and gives what the lease held back.
func TestSettleIntoDebtDropsTheLease(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			ctx := context.Background()
			p := limiter.MustPolicy("tokens", limiter.PerHour(1000))
			rs := newReplicaSet(t, 1, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
				WithLeases(500*time.Millisecond, 10), withClockSource(clock))
			fakeMonos(rs.stores)
			if clock == serverClock {
				awaitServerWindow(t, sharedClient(t), time.Hour)
			}
			l, s := rs.ls[0], rs.stores[0]
			hot(t, l, rs.clk, 20)
			if s.leases.held(p, "acme") == 0 {
				t.Fatal("no lease held: the test needs one")
			}
			r, err := l.Allow(ctx, "acme", 1)
			if err != nil || !r.Allowed {
				t.Fatalf("reserve 1: %+v, %v", r, err)
			}
			if err := l.Settle(ctx, "acme", 1, 5000, r); err != nil {
				t.Fatal(err)
			}
			if held := s.leases.held(p, "acme"); held != 0 {
				t.Fatalf("after a settle into debt the replica still holds %d leased units", held)
			}
			for i := range 5 {
				if d, err := l.Allow(ctx, "acme", 1); err != nil || d.Allowed {
					t.Fatalf("request %d after a settle into debt: %+v, %v; want refused", i+1, d, err)
				}
			}
			if s.Stats().GivenBack == 0 {
				t.Error("the lease's units were not given back")
			}
		})
	}
}

// TestLeaseTakesBackNoChargeBeforeAReset: a refund, or a settle below
// its reservation, of a request admitted before a Reset gives nothing
// to the lease the replica took after it either: the lease's units are
// the fresh budget's, and handing the refunded request's units back to
// it let the replica spend them again (the history checker found 103 of
// 100 admitted). Both clocks.
func TestLeaseTakesBackNoChargeBeforeAReset(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, how := range []string{"refund", "settle"} {
			t.Run(clock.String()+"/"+how, func(t *testing.T) {
				ctx := context.Background()
				p := limiter.MustPolicy("plan", limiter.PerHour(100))
				rs := newReplicaSet(t, 1, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
					WithLeases(500*time.Millisecond, 10), withClockSource(clock))
				fakeMonos(rs.stores)
				if clock == serverClock {
					awaitServerWindow(t, sharedClient(t), time.Hour)
				}
				a := rs.ls[0]
				before := rs.admitThenReset(t, a, a, 3, clock)
				hot(t, a, rs.clk, 20)
				if rs.stores[0].leases.held(p, "acme") == 0 {
					t.Fatal("A holds no lease: the test needs one")
				}
				var err error
				if how == "refund" {
					err = a.Refund(ctx, "acme", 3, before)
				} else {
					err = a.Settle(ctx, "acme", 3, 0, before)
				}
				if err != nil {
					t.Fatal(err)
				}
				if after := 20 + rs.spendRoundRobin(t, "acme", 3); after != 100 {
					t.Fatalf("after the Reset A admitted %d, want exactly 100: the %s of a request admitted before it returned its units", after, how)
				}
			})
		}
	}
}

// TestLeaseTakesBackNoChargeBeforeAnotherReplicasReset: replica A, hot
// and leasing, admits a request; B resets the key; A stays busy for a
// second and a half (its lease is granted anew), then refunds the
// request. The refund gives nothing back: not to the fresh count, nor to
// A's lease, from which A would spend it again. After the Reset the
// replicas admit at most the limit plus what A held leased at the Reset
// (the documented bound: a replica may spend for a second what it leased
// before another's Reset). Before, a lease took back any refund of a
// decision made after the span's first grant, and they admitted 106 of
// 103. On the limiter's clock only: on Redis's the same sequence
// admitted 103 before the fix as after it, so it would test nothing
// there (TestLeaseTakesBackNoChargeBeforeAReset covers both clocks).
func TestLeaseTakesBackNoChargeBeforeAnotherReplicasReset(t *testing.T) {
	t.Run(appClock.String(), func(t *testing.T) {
		ctx := context.Background()
		p := limiter.MustPolicy("plan", limiter.PerHour(100))
		rs := newReplicaSet(t, 2, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
			WithLeases(500*time.Millisecond, 10))
		advance := fakeMonos(rs.stores)
		a, b := rs.ls[0], rs.ls[1]
		hot(t, a, rs.clk, 20)
		before := rs.admitThenReset(t, a, b, 3, appClock)
		held := rs.stores[0].leases.held(p, "acme") // B's Reset leaves A's lease: A may spend it for a second
		// A busy for 1.5 s: its lease ends, and it is granted anew.
		var after int64
		for range 30 {
			if d, err := a.Allow(ctx, "acme", 1); err != nil || !d.Allowed {
				t.Fatalf("A after the Reset: %+v, %v", d, err)
			}
			after++
			rs.clk.Advance(50 * time.Millisecond)
			advance(50 * time.Millisecond)
		}
		if err := a.Refund(ctx, "acme", 3, before); err != nil {
			t.Fatal(err)
		}
		after += rs.spendRoundRobin(t, "acme", 3)
		if after > 100+held {
			t.Fatalf("after the Reset the replicas admitted %d, want at most 100 and the %d A held: the refund of a request admitted before it gave its units back", after, held)
		}
	})
}

// TestSettlePastItsReservationAfterAReset: a settle that charges beyond
// its reservation, in a window a Reset marked, is charged (before the
// fix settle.lua compared the mark with the instant only a return
// sends, and failed every such settle for as long as the mark lived: the
// history checker's settles failed by the thousand). Both clocks, and
// a request admitted before the Reset as well as after it: a charge is
// never refused.
func TestSettlePastItsReservationAfterAReset(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			ctx := context.Background()
			p := limiter.MustPolicy("plan", limiter.PerHour(10))
			rs := newReplicaSet(t, 1, p, func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) },
				withClockSource(clock))
			if clock == serverClock {
				awaitServerWindow(t, sharedClient(t), time.Hour)
			}
			a := rs.ls[0]
			before := rs.admitThenReset(t, a, a, 1, clock)
			fresh, err := a.Allow(ctx, "acme", 2)
			if err != nil || !fresh.Allowed {
				t.Fatalf("after the Reset: %+v, %v", fresh, err)
			}
			if err := a.Settle(ctx, "acme", 2, 5, fresh); err != nil {
				t.Fatalf("settle past its reservation after a Reset: %v", err)
			}
			if err := a.Settle(ctx, "acme", 1, 3, before); err != nil {
				t.Fatalf("settle past its reservation of a request admitted before the Reset: %v", err)
			}
			if u, _ := a.Usage(ctx, "acme"); u.Windows[0].Used != 7 {
				t.Fatalf("%d used, want 7: 2 reserved and 3 more, then 2 more", u.Windows[0].Used)
			}
		})
	}
}
