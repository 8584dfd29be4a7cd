package metrics_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
	"github.com/fixedwindow/ratelimit/middleware/reason"
)

var t0 = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// failing is a limiter whose store is down. Its clock, like a
// limiter.Limiter's, is the one the middleware times it by.
type failing struct {
	p   *limiter.Policy
	clk limiter.Clock
}

func newFailing(name string) failing {
	return failing{limiter.MustPolicy(name, limiter.PerMinute(5)), steppingClock{limitertest.New(t0)}}
}

func (f failing) Allow(context.Context, string, int64) (limiter.Decision, error) {
	return limiter.Decision{}, fmt.Errorf("redisstore: take: %w", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")})
}
func (f failing) AllowAt(ctx context.Context, key string, cost int64, _ time.Time) (limiter.Decision, error) {
	return f.Allow(ctx, key, cost)
}
func (f failing) Clock() limiter.Clock    { return f.clk }
func (f failing) Policy() *limiter.Policy { return f.p }

// steppingClock advances 2ms at every reading. The middleware reads the
// limiter's clock once to decide and once when the answer is in, so every
// decision takes 2ms.
type steppingClock struct{ c *limitertest.Clock }

func (s steppingClock) Now() time.Time { s.c.Advance(2 * time.Millisecond); return s.c.Now() }

func newHandler(t *testing.T, m *metrics.Metrics, l middleware.Limiter, opts ...middleware.Option) http.Handler {
	t.Helper()
	opts = append(opts, middleware.WithObserver(m.Observe))
	mw, err := middleware.New(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

func send(h http.Handler, remoteAddr string) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = remoteAddr
	h.ServeHTTP(httptest.NewRecorder(), r)
}

func TestMetricsCountEveryOutcome(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := steppingClock{limitertest.New(t0)}
	api, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	rollout, err := limiter.New(limiter.MustPolicy("rollout", limiter.PerMinute(1)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer rollout.Close()
	enforced := newHandler(t, m, api)
	shadow := newHandler(t, m, rollout, middleware.WithShadow())
	broken := newHandler(t, m, newFailing("cache"), middleware.WithFailOpen())

	for _, addr := range []string{"192.0.2.10:1", "192.0.2.10:2", "192.0.2.10:3", "192.0.2.11:1"} {
		send(enforced, addr) // 2 allowed, 1 denied for .10; 1 allowed for .11
	}
	send(enforced, "no-port") // key error
	send(shadow, "192.0.2.10:1")
	send(shadow, "192.0.2.10:2") // shadow denied
	send(broken, "192.0.2.10:1")
	send(broken, "192.0.2.10:2")

	want := `
# HELP ratelimit_decisions_total Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{outcome="allowed",policy="api"} 3
ratelimit_decisions_total{outcome="allowed",policy="cache"} 0
ratelimit_decisions_total{outcome="allowed",policy="rollout"} 1
ratelimit_decisions_total{outcome="denied",policy="api"} 1
ratelimit_decisions_total{outcome="denied",policy="cache"} 0
ratelimit_decisions_total{outcome="denied",policy="rollout"} 0
ratelimit_decisions_total{outcome="error",policy="api"} 0
ratelimit_decisions_total{outcome="error",policy="cache"} 2
ratelimit_decisions_total{outcome="error",policy="rollout"} 0
ratelimit_decisions_total{outcome="key_error",policy="api"} 1
ratelimit_decisions_total{outcome="key_error",policy="cache"} 0
ratelimit_decisions_total{outcome="key_error",policy="rollout"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="api"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="cache"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="rollout"} 1
` + laterOutcomes("api", "cache", "rollout") + `# HELP ratelimit_store_errors_total Decisions and settles the limiter could not make, by policy and reason.
# TYPE ratelimit_store_errors_total counter
ratelimit_store_errors_total{policy="cache",reason="unavailable"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_decisions_total", "ratelimit_store_errors_total"); err != nil {
		t.Error(err)
	}
	// One latency series per policy; each observation took 2ms on the
	// stepping clock; key errors are not timed.
	if n, err := testutil.GatherAndCount(reg, "ratelimit_decision_duration_seconds"); err != nil || n != 3 {
		t.Errorf("latency series = %d (%v), want 3", n, err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]uint64{}
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if v := lp.GetValue(); strings.Contains(v, "192.0.2") || strings.Contains(v, "ip4:") || strings.Contains(v, "no-port") {
					t.Errorf("metric %s has label %s=%q: a client identity", f.GetName(), lp.GetName(), v)
				}
			}
			if f.GetName() == "ratelimit_decision_duration_seconds" {
				h := mt.GetHistogram()
				counts[mt.GetLabel()[0].GetValue()] = h.GetSampleCount()
				if got, want := h.GetSampleSum(), 0.002*float64(h.GetSampleCount()); got < want-1e-9 || got > want+1e-9 {
					t.Errorf("latency sum for %s = %v, want %v", mt.GetLabel()[0].GetValue(), got, want)
				}
			}
		}
	}
	if want := map[string]uint64{"api": 4, "rollout": 2, "cache": 2}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("latency sample counts = %v, want %v", counts, want)
	}
}

// laterOutcomes returns the zero series of the outcomes middleware names
// after KeyError, for each policy: New creates them as it does the
// others, and a test's expected text must not go stale when one is added.
func laterOutcomes(policies ...string) string {
	var b strings.Builder
	for o := middleware.KeyError + 1; o.String() != "unknown"; o++ {
		for _, p := range policies {
			fmt.Fprintf(&b, "ratelimit_decisions_total{outcome=%q,policy=%q} 0\n", o, p)
		}
	}
	return b.String()
}

// An outcome middleware does not name is counted under its String, and
// timed only if it carries a duration.
func TestUnknownOutcome(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := limiter.MustPolicy("api", limiter.PerMinute(1))
	m.Observe(middleware.Event{Policy: p, Outcome: 200})
	m.Observe(middleware.Event{Policy: p, Outcome: 201, Duration: time.Millisecond})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var unknown float64
	var timed uint64
	for _, f := range fams {
		for _, mt := range f.GetMetric() {
			switch f.GetName() {
			case "ratelimit_decisions_total":
				for _, lp := range mt.GetLabel() {
					if lp.GetName() == "outcome" && lp.GetValue() == "unknown" {
						unknown += mt.GetCounter().GetValue()
					}
				}
			case "ratelimit_decision_duration_seconds":
				timed += mt.GetHistogram().GetSampleCount()
			}
		}
	}
	if unknown != 2 || timed != 1 {
		t.Errorf("decisions{outcome=unknown} = %v, timed %d; want 2, timed 1", unknown, timed)
	}
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		reg  prometheus.Registerer
		opts []metrics.Option
	}{
		{"nil_registerer", nil, nil},
		{"bad_namespace", prometheus.NewRegistry(), []metrics.Option{metrics.WithNamespace("rate-limit")}},
		{"empty_namespace", prometheus.NewRegistry(), []metrics.Option{metrics.WithNamespace("")}},
		{"no_buckets", prometheus.NewRegistry(), []metrics.Option{metrics.WithBuckets(nil)}},
		{"buckets_not_increasing", prometheus.NewRegistry(), []metrics.Option{metrics.WithBuckets([]float64{0.1, 0.1})}},
		{"nil_reason", prometheus.NewRegistry(), []metrics.Option{metrics.WithReason(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := metrics.New(tt.reg, tt.opts...)
			if !errors.Is(err, metrics.ErrInvalidOption) {
				t.Fatalf("New error = %v, want ErrInvalidOption", err)
			}
			if !strings.HasPrefix(err.Error(), "metrics: ") {
				t.Errorf("New error = %q, want the prefix %q", err, "metrics: ")
			}
		})
	}
}

func TestNewTwiceOnOneRegistryFails(t *testing.T) {
	reg := prometheus.NewRegistry()
	if _, err := metrics.New(reg); err != nil {
		t.Fatal(err)
	}
	_, err := metrics.New(reg)
	var are prometheus.AlreadyRegisteredError
	if !errors.As(err, &are) {
		t.Fatalf("second New error = %v, want prometheus.AlreadyRegisteredError", err)
	}
	if _, err := metrics.New(reg, metrics.WithNamespace("edge")); err != nil {
		t.Errorf("New with another namespace: %v", err)
	}
}

func TestCustomReasonAndBuckets(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithReason(func(error) string { return "redis_down" }), metrics.WithBuckets([]float64{0.001, 0.01}))
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(t, m, newFailing("cache"))
	send(h, "192.0.2.1:1")
	want := `
# HELP ratelimit_store_errors_total Decisions and settles the limiter could not make, by policy and reason.
# TYPE ratelimit_store_errors_total counter
ratelimit_store_errors_total{policy="cache",reason="redis_down"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_store_errors_total"); err != nil {
		t.Error(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "ratelimit_decision_duration_seconds" {
			if n := len(f.GetMetric()[0].GetHistogram().GetBucket()); n != 2 {
				t.Errorf("histogram has %d buckets, want 2", n)
			}
		}
	}
}

// TestReasonIsSharedWithOtherAdapters: by default a store error is
// labelled by reason.Of, which the OpenTelemetry adapter uses too; its
// table is in package reason.
func TestReasonIsSharedWithOtherAdapters(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	p := limiter.MustPolicy("api", limiter.PerMinute(5))
	want := map[string]int{}
	for _, err := range []error{
		fmt.Errorf("take: %w", context.Canceled),
		fmt.Errorf("take: %w", redisstore.ErrCircuitOpen),
		reasoned("out_of_memory"),
		&net.OpError{Op: "dial", Err: errors.New("connection refused")},
		limiter.ErrInvalidCost,
		errors.New("NOSCRIPT"),
	} {
		m.Observe(middleware.Event{Policy: p, Outcome: middleware.Error, Err: err})
		want[reason.Of(err)]++
	}
	var b strings.Builder
	b.WriteString("# HELP ratelimit_store_errors_total Decisions and settles the limiter could not make, by policy and reason.\n# TYPE ratelimit_store_errors_total counter\n")
	for _, r := range slices.Sorted(maps.Keys(want)) {
		fmt.Fprintf(&b, "ratelimit_store_errors_total{policy=\"api\",reason=%q} %d\n", r, want[r])
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(b.String()), "ratelimit_store_errors_total"); err != nil {
		t.Error(err)
	}
}

// reasoned is an error that names its reason, as the Redis store's do.
type reasoned string

func (r reasoned) Error() string  { return string(r) }
func (r reasoned) Reason() string { return string(r) }

// Past the cache's bound, events are still counted, under the right
// policy.
func TestManyPoliciesAreCountedPastTheCache(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := range n {
		p := limiter.MustPolicy(fmt.Sprintf("p%d", i%3), limiter.PerMinute(int64(i+1)))
		m.Observe(middleware.Event{Policy: p, Outcome: middleware.Allowed})
		m.Observe(middleware.Event{Policy: p, Outcome: middleware.Allowed})
	}
	m.Observe(middleware.Event{Outcome: middleware.Denied}) // no policy
	want := `
# HELP ratelimit_decisions_total Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).
# TYPE ratelimit_decisions_total counter
ratelimit_decisions_total{outcome="allowed",policy="p0"} 200
ratelimit_decisions_total{outcome="allowed",policy="p1"} 200
ratelimit_decisions_total{outcome="allowed",policy="p2"} 200
ratelimit_decisions_total{outcome="allowed",policy="unknown"} 0
ratelimit_decisions_total{outcome="denied",policy="p0"} 0
ratelimit_decisions_total{outcome="denied",policy="p1"} 0
ratelimit_decisions_total{outcome="denied",policy="p2"} 0
ratelimit_decisions_total{outcome="denied",policy="unknown"} 1
ratelimit_decisions_total{outcome="error",policy="p0"} 0
ratelimit_decisions_total{outcome="error",policy="p1"} 0
ratelimit_decisions_total{outcome="error",policy="p2"} 0
ratelimit_decisions_total{outcome="error",policy="unknown"} 0
ratelimit_decisions_total{outcome="key_error",policy="p0"} 0
ratelimit_decisions_total{outcome="key_error",policy="p1"} 0
ratelimit_decisions_total{outcome="key_error",policy="p2"} 0
ratelimit_decisions_total{outcome="key_error",policy="unknown"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="p0"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="p1"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="p2"} 0
ratelimit_decisions_total{outcome="shadow_denied",policy="unknown"} 0
` + laterOutcomes("p0", "p1", "p2", "unknown")
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_decisions_total"); err != nil {
		t.Error(err)
	}
}

// An in-flight cap is counted as a policy of its own, and its gauge
// holds the requests holding a slot; a hold is no answer time.
func TestInFlightGauge(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	clk := limitertest.New(t0)
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := limiter.NewInFlight("exports", 1, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mw, err := middleware.New(l, middleware.WithInFlight(f, nil), middleware.WithObserver(m.Observe))
	if err != nil {
		t.Fatal(err)
	}
	gauge := func() float64 { return value(t, reg, "ratelimit_in_flight", "policy", "exports") }
	var inside float64
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		inside = gauge()
		clk.Advance(time.Minute)                                                                // a long hold, which the histogram must not see
		send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), "192.0.2.10:2") // refused by the cap
	}))
	send(h, "192.0.2.10:1")
	if inside != 1 || gauge() != 0 {
		t.Fatalf("in flight: %v inside the handler and %v after, want 1 and 0", inside, gauge())
	}
	for outcome, want := range map[string]float64{"allowed": 1, "denied": 1, "released": 1} {
		if got := value(t, reg, "ratelimit_decisions_total", "policy", "exports", "outcome", outcome); got != want {
			t.Errorf("exports %s: %v, want %v", outcome, got, want)
		}
	}
	if got := value(t, reg, "ratelimit_decisions_total", "policy", "api", "outcome", "refunded"); got != 1 {
		t.Errorf("api refunded: %v, want 1 (the request the cap refused)", got)
	}
	if n, err := testutil.GatherAndCount(reg, "ratelimit_in_flight"); err != nil || n != 1 {
		t.Errorf("in-flight series = %d (%v), want exports's alone", n, err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		for _, mt := range fam.GetMetric() {
			if fam.GetName() == "ratelimit_decision_duration_seconds" && mt.GetHistogram().GetSampleSum() > 1 {
				t.Errorf("latency of %v: sum %vs, want no hold time in it", mt.GetLabel(), mt.GetHistogram().GetSampleSum())
			}
		}
	}
}

// value returns the value of the series of family name whose labels
// include the pairs given, or -1 when there is none.
func value(t *testing.T, reg prometheus.Gatherer, name string, pairs ...string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, fam := range fams {
		if fam.GetName() != name {
			continue
		}
	series:
		for _, mt := range fam.GetMetric() {
			labels := map[string]string{}
			for _, lp := range mt.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(pairs); i += 2 {
				if labels[pairs[i]] != pairs[i+1] {
					continue series
				}
			}
			switch {
			case mt.GetGauge() != nil:
				return mt.GetGauge().GetValue()
			case mt.GetCounter() != nil:
				return mt.GetCounter().GetValue()
			}
		}
	}
	return -1
}

// A settle that failed counts as a store error, by its reason, beside its
// settled outcome; one that succeeded does not.
func TestFailedSettleIsAStoreError(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg, metrics.WithReason(func(error) string { return "timeout" }))
	if err != nil {
		t.Fatal(err)
	}
	p := limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens")
	m.Observe(middleware.Event{Policy: p, Outcome: middleware.Settled, Cost: 500})
	m.Observe(middleware.Event{Policy: p, Outcome: middleware.Settled, Cost: 800, Err: errors.New("redisstore: settle: i/o timeout")})
	want := `
# HELP ratelimit_store_errors_total Decisions and settles the limiter could not make, by policy and reason.
# TYPE ratelimit_store_errors_total counter
ratelimit_store_errors_total{policy="tokens",reason="timeout"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_store_errors_total"); err != nil {
		t.Error(err)
	}
}

// The limiters a plan derives, one per plan and zone, share their
// policy's name and so its series: observing them allocates nothing once
// the name is cached, however many there are; and past the cache's bound
// of names, each name's events are still counted under it.
func TestPlansShareTheirPolicysSeries(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	l := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC)))
	t.Cleanup(func() { _ = l.Close() })
	var policies []*limiter.Policy
	for i := range 400 {
		plan := &limiter.Plan{Name: fmt.Sprint(i), Limits: map[string][]int64{"api": {int64(i + 1)}}}
		v, err := l.For(plan, []string{"Europe/Paris", "Asia/Kolkata"}[i%2])
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, v.Policy())
	}
	m.Observe(middleware.Event{Policy: policies[0], Outcome: middleware.Allowed})
	i := 0
	if n := testing.AllocsPerRun(400, func() {
		m.Observe(middleware.Event{Policy: policies[i%len(policies)], Outcome: middleware.Allowed})
		i++
	}); n != 0 {
		t.Errorf("Observe of a plan's policy: %v allocations, want 0", n)
	}
	if got := value(t, reg, "ratelimit_decisions_total", "policy", "api", "outcome", "allowed"); got != 402 {
		t.Errorf("api allowed = %v, want 402", got)
	}
	for i := range 300 {
		p := limiter.MustPolicy(fmt.Sprintf("n%d", i), limiter.PerMinute(1))
		m.Observe(middleware.Event{Policy: p, Outcome: middleware.Denied})
		m.Observe(middleware.Event{Policy: p, Outcome: middleware.Denied})
	}
	if got := value(t, reg, "ratelimit_decisions_total", "policy", "n299", "outcome", "denied"); got != 2 {
		t.Errorf("n299 denied, past the cache's bound = %v, want 2", got)
	}
}
