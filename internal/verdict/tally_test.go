package verdict

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

// settled records the actual cost of the one settle of a round.
type settled struct {
	calls  atomic.Int64
	actual atomic.Int64
}

func (s *settled) Settle(_ context.Context, _ string, _, actual int64, _ limiter.Decision) error {
	s.calls.Add(1)
	s.actual.Store(actual)
	return nil
}

// policied is a RuleLimiter that is never asked: the round's charge is
// made by hand.
type policied struct{ p *limiter.Policy }

func (l policied) Allow(context.Context, string, int64) (limiter.Decision, error) {
	return limiter.Decision{}, nil
}
func (l policied) Policy() *limiter.Policy { return l.p }

// TestReportCountedIfAndOnlyIfTaken races handlers' reports with the
// settle of their request, in seeded rounds: the cost settled is exactly
// the sum of the reports that Report said it took, whatever interleaving
// (a report that passed the closed check just before the settle read the
// totals, and then added to a total nobody read, was lost while Report
// returned true: issue 36).
func TestReportCountedIfAndOnlyIfTaken(t *testing.T) {
	const unit = "acme-tokens"
	p := limiter.MustPolicy("tokens", limiter.PerMinute(1_000_000)).MustUnit(unit)
	rounds := 200
	if testing.Short() {
		rounds = 50
	}
	for seed := range uint64(rounds) {
		rng := rand.New(rand.NewPCG(seed, 36))
		st := new(settled)
		l := Life{
			Ctx:     context.Background(),
			Rules:   []Rule{{Lim: policied{p}, Meter: Reported, Settler: st, Unit: unit}},
			Keys:    [MaxRules]string{"k"},
			Costs:   [MaxRules]int64{1},
			Charged: Charges{N: 1, Rule: [MaxRules]int{0}, D: [MaxRules]limiter.Decision{{Allowed: true, Policy: p}}, Owed: true},
		}
		var tally Tally
		tally.Init(context.Background(), &Units{List: []string{unit}})
		tally.Arm(&l)
		reporters := 2 + rng.IntN(4)
		// The settle comes once this many reports were taken: the
		// reporters are busy then.
		after := rng.Int64N(2000)
		var (
			wg    sync.WaitGroup
			took  atomic.Int64
			start = make(chan struct{})
		)
		for range reporters {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for Report(&tally, unit, 1) {
					took.Add(1)
				}
			}()
		}
		close(start)
		for took.Load() < after {
			runtime.Gosched()
		}
		l.Settle(&tally, 0)
		wg.Wait()
		want := took.Load()
		if want == 0 {
			want = 1 // nothing reported: the reservation
		}
		if got := st.actual.Load(); st.calls.Load() != 1 || got != want {
			t.Fatalf("seed %d (%d reporters, settled after %d reports): settled %d in %d calls, want %d, the sum of the reports taken, in 1",
				seed, reporters, after, got, st.calls.Load(), want)
		}
		if Report(&tally, unit, 1) {
			t.Fatalf("seed %d: a report after the settle was taken", seed)
		}
	}
}
