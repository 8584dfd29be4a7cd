package testfixture

import (
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// ScaleCustomers is how many customers the scale benchmarks serve, in
// turn: customer c is of pair c mod the workload's pairs (every pair has
// its customers), so every workload decides the same counters and they
// differ by their resolutions alone.
const ScaleCustomers = 1 << 20

// A ScaleLoad is one workload of issue 44: what a service's lookup
// answers, pair k being Plans[k] in Zones[k].
type ScaleLoad struct {
	Name  string
	Plans []*limiter.Plan
	Zones []string
}

// ScalePolicy is the policy of the scale benchmarks: a calendar month,
// counted in each customer's zone, over a minute, with limits no client
// reaches.
func ScalePolicy() *limiter.Policy {
	return limiter.MustPolicy("scale", limiter.PerMonthIn(1_000_000_000_000, time.UTC), limiter.PerMinute(100_000_000_000))
}

// scalePlan returns the j'th plan of the scale policy: limits of its own.
func scalePlan(j int) *limiter.Plan {
	return &limiter.Plan{Name: "plan-" + strconv.Itoa(j), Limits: map[string][]int64{"scale": {900_000_000_000 + int64(j), 100_000_000_000}}}
}

// ScaleLoads returns the workloads of issue 44, in order: n plan and
// zone pairs (pair k is plan k/len(zones) in zone k%len(zones), so 4,186
// pairs are 7 plans across every zone of the tz database); a plan of its
// own for each of 100,000 customers, each in a zone; and a fresh *Plan
// per request whose contents are one of 7 plans' (65,536 distinct
// values, in every zone: 4,186 pairs by contents), as a lookup that
// decodes a database row per request returns, the decoding itself left
// out of the figures.
func ScaleLoads(tb testing.TB) []ScaleLoad {
	tb.Helper()
	zones, err := Zones()
	if err != nil {
		tb.Fatal(err)
	}
	var loads []ScaleLoad
	for _, n := range []int{4, 4186, 100_000, 1_000_000} {
		ld := ScaleLoad{Name: "pairs=" + strconv.Itoa(n), Plans: make([]*limiter.Plan, n), Zones: make([]string, n)}
		for k := range n {
			if k%len(zones) == 0 {
				ld.Plans[k] = scalePlan(k / len(zones))
			} else {
				ld.Plans[k] = ld.Plans[k-1]
			}
			ld.Zones[k] = zones[k%len(zones)]
		}
		loads = append(loads, ld)
	}
	const customers = 100_000
	ld := ScaleLoad{Name: "customers=100000", Plans: make([]*limiter.Plan, customers), Zones: make([]string, customers)}
	for k := range customers {
		ld.Plans[k], ld.Zones[k] = scalePlan(k), zones[k%len(zones)]
	}
	loads = append(loads, ld)
	const fresh = 65_536
	ld = ScaleLoad{Name: "fresh", Plans: make([]*limiter.Plan, fresh), Zones: make([]string, fresh)}
	for k := range fresh {
		ld.Plans[k], ld.Zones[k] = scalePlan(k%7), zones[k%len(zones)]
	}
	return append(loads, ld)
}

// ScaleLimiter returns a limiter of ScalePolicy keeping bound resolutions,
// on a memory store that holds every customer's counters, both closed
// when tb ends.
func ScaleLimiter(tb testing.TB, bound int) *limiter.Limiter {
	tb.Helper()
	st, err := limiter.NewMemoryStore(limiter.WithMaxKeys(4 * ScaleCustomers))
	if err != nil {
		tb.Fatal(err)
	}
	l, err := limiter.New(ScalePolicy(), limiter.WithClock(limitertest.New(time.Date(2026, 7, 15, 12, 0, 30, 0, time.UTC))),
		limiter.WithResolutions(bound), limiter.WithStore(st))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		l.Close()
		st.Close()
	})
	return l
}
