package otelmetrics_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
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

// fixture is an adapter reading into a manual reader and a span
// recorder.
type fixture struct {
	m      *otelmetrics.Metrics
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
}

func newFixture(t *testing.T, opts ...otelmetrics.Option) *fixture {
	t.Helper()
	f := &fixture{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(f.reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	f.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(f.spans))
	t.Cleanup(func() { f.tp.Shutdown(context.Background()) })
	m, err := otelmetrics.New(mp, opts...)
	if err != nil {
		t.Fatal(err)
	}
	f.m = m
	return f
}

// collect returns the instruments read, by name.
func (f *fixture) collect(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := f.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otelmetrics.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otelmetrics.ScopeName)
		}
		for _, m := range sm.Metrics {
			got[m.Name] = m
		}
	}
	return got
}

func (f *fixture) handler(t *testing.T, l middleware.Limiter, opts ...middleware.Option) http.Handler {
	t.Helper()
	mw, err := middleware.New(l, append(opts, middleware.WithObserver(f.m.Observe))...)
	if err != nil {
		t.Fatal(err)
	}
	return mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

// send sends one request through h inside a span of its own, which it
// ends.
func (f *fixture) send(h http.Handler, remoteAddr string) {
	ctx, span := f.tp.Tracer("test").Start(context.Background(), "GET /")
	defer span.End()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.RemoteAddr = remoteAddr
	h.ServeHTTP(httptest.NewRecorder(), r)
}

func counter(attrs ...attribute.KeyValue) func(int64) metricdata.DataPoint[int64] {
	return func(v int64) metricdata.DataPoint[int64] {
		return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attrs...), Value: v}
	}
}

func decisions(policy, outcome string) func(int64) metricdata.DataPoint[int64] {
	return counter(attribute.String("ratelimit.policy", policy), attribute.String("ratelimit.outcome", outcome))
}

func TestMetricsCountEveryOutcome(t *testing.T) {
	f := newFixture(t)
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
	enforced := f.handler(t, api)
	shadow := f.handler(t, rollout, middleware.WithShadow())
	broken := f.handler(t, newFailing("cache"), middleware.WithFailOpen())

	for _, addr := range []string{"192.0.2.10:1", "192.0.2.10:2", "192.0.2.10:3", "192.0.2.11:1"} {
		f.send(enforced, addr) // 2 allowed, 1 denied for .10; 1 allowed for .11
	}
	f.send(enforced, "no-port") // key error
	f.send(shadow, "192.0.2.10:1")
	f.send(shadow, "192.0.2.10:2") // shadow denied
	f.send(broken, "192.0.2.10:1")
	f.send(broken, "192.0.2.10:2")

	got := f.collect(t)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.decisions",
		Description: "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				decisions("api", "allowed")(3),
				decisions("api", "denied")(1),
				decisions("api", "key_error")(1),
				decisions("rollout", "allowed")(1),
				decisions("rollout", "shadow_denied")(1),
				decisions("cache", "error")(2),
			},
		},
	}, got["ratelimit.decisions"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.store.errors",
		Description: "Decisions and settles the limiter could not make, by policy and reason.",
		Unit:        "{error}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				counter(attribute.String("ratelimit.policy", "cache"), attribute.String("ratelimit.reason", "unavailable"))(2),
			},
		},
	}, got["ratelimit.store.errors"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())

	// One latency series per policy; each decision took 2ms on the
	// stepping clock; key errors are not timed.
	h, ok := got["ratelimit.decision.duration"].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("ratelimit.decision.duration is %T, want a float64 histogram", got["ratelimit.decision.duration"].Data)
	}
	if u := got["ratelimit.decision.duration"].Unit; u != "s" {
		t.Errorf("duration unit %q, want s", u)
	}
	counts := map[string]uint64{}
	for _, dp := range h.DataPoints {
		policy, _ := dp.Attributes.Value("ratelimit.policy")
		counts[policy.AsString()] = dp.Count
		if want := 0.002 * float64(dp.Count); dp.Sum < want-1e-9 || dp.Sum > want+1e-9 {
			t.Errorf("latency sum for %s = %v, want %v", policy.AsString(), dp.Sum, want)
		}
		if want := []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1}; !slices.Equal(dp.Bounds, want) {
			t.Errorf("bounds %v, want the defaults %v", dp.Bounds, want)
		}
	}
	if want := map[string]uint64{"api": 4, "rollout": 2, "cache": 2}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("latency sample counts = %v, want %v", counts, want)
	}
	assertNoClientIdentity(t, got)
}

// assertNoClientIdentity fails if an attribute value of any instrument
// names a client.
func assertNoClientIdentity(t *testing.T, got map[string]metricdata.Metrics) {
	t.Helper()
	check := func(name string, set attribute.Set) {
		for _, kv := range set.ToSlice() {
			if v := kv.Value.String(); strings.Contains(v, "192.0.2") || strings.Contains(v, "no-port") {
				t.Errorf("%s has attribute %s=%q: a client identity", name, kv.Key, v)
			}
		}
	}
	for name, m := range got {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, dp := range d.DataPoints {
				check(name, dp.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, dp := range d.DataPoints {
				check(name, dp.Attributes)
			}
		}
	}
}

// spanEvent is what a test expects of one span's rate-limit events.
type spanEvent map[string]string

func eventsOf(t *testing.T, s sdktrace.ReadOnlySpan) []spanEvent {
	t.Helper()
	var out []spanEvent
	for _, ev := range s.Events() {
		if ev.Name != "ratelimit.decision" {
			t.Errorf("span event %q, want ratelimit.decision", ev.Name)
			continue
		}
		e := spanEvent{}
		for _, kv := range ev.Attributes {
			e[string(kv.Key)] = kv.Value.String()
		}
		out = append(out, e)
	}
	return out
}

func TestSpanEventsSayWhy(t *testing.T) {
	f := newFixture(t)
	api, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(limitertest.New(t0.Add(30*time.Second))))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	enforced := f.handler(t, api)
	broken := f.handler(t, newFailing("cache"))
	for _, addr := range []string{"192.0.2.10:1", "192.0.2.10:2", "192.0.2.10:3"} {
		f.send(enforced, addr)
	}
	f.send(enforced, "no-port")
	f.send(broken, "192.0.2.10:1")

	ended := f.spans.Ended()
	var got [][]spanEvent
	for _, s := range ended {
		got = append(got, eventsOf(t, s))
	}
	want := [][]spanEvent{
		{{"ratelimit.policy": "api", "ratelimit.outcome": "allowed", "ratelimit.limit": "2", "ratelimit.remaining": "1"}},
		{{"ratelimit.policy": "api", "ratelimit.outcome": "allowed", "ratelimit.limit": "2", "ratelimit.remaining": "0"}},
		{{"ratelimit.policy": "api", "ratelimit.outcome": "denied", "ratelimit.limit": "2", "ratelimit.remaining": "0", "ratelimit.retry_after": "30"}},
		{{"ratelimit.policy": "api", "ratelimit.outcome": "key_error"}},
		{{"ratelimit.policy": "cache", "ratelimit.outcome": "error", "ratelimit.reason": "unavailable"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("span events:\ngot  %v\nwant %v", got, want)
	}
}

// An unsampled span, or none, gets no event, and the metrics are
// recorded all the same.
func TestNoEventWithoutRecordingSpan(t *testing.T) {
	f := newFixture(t)
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()), sdktrace.WithSpanProcessor(f.spans))
	defer tp.Shutdown(context.Background())
	api, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)))
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	h := f.handler(t, api)
	ctx, span := tp.Tracer("test").Start(context.Background(), "GET /")
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:1"
	h.ServeHTTP(httptest.NewRecorder(), r)
	span.End()
	r = httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "192.0.2.1:2"
	h.ServeHTTP(httptest.NewRecorder(), r)
	f.m.Observe(middleware.Event{Outcome: middleware.Denied}) // no request, no policy
	if n := len(f.spans.Ended()); n != 0 {
		t.Errorf("%d spans recorded, want 0", n)
	}
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.decisions",
		Description: "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  []metricdata.DataPoint[int64]{decisions("api", "allowed")(2), decisions("unknown", "denied")(1)},
		},
	}, f.collect(t)["ratelimit.decisions"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	tests := []struct {
		name string
		opts []otelmetrics.Option
		nilP bool
	}{
		{"nil_provider", nil, true},
		{"nil_option", []otelmetrics.Option{nil}, false},
		{"no_buckets", []otelmetrics.Option{otelmetrics.WithBuckets(nil)}, false},
		{"buckets_not_increasing", []otelmetrics.Option{otelmetrics.WithBuckets([]float64{0.1, 0.1})}, false},
		{"nil_reason", []otelmetrics.Option{otelmetrics.WithReason(nil)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.nilP {
				_, err = otelmetrics.New(nil, tt.opts...)
			} else {
				_, err = otelmetrics.New(noop.NewMeterProvider(), tt.opts...)
			}
			if !errors.Is(err, otelmetrics.ErrInvalidOption) {
				t.Fatalf("New error = %v, want ErrInvalidOption", err)
			}
			if !strings.HasPrefix(err.Error(), "otelmetrics: ") {
				t.Errorf("New error = %q, want the prefix %q", err, "otelmetrics: ")
			}
		})
	}
}

func TestCustomReasonAndBuckets(t *testing.T) {
	f := newFixture(t, otelmetrics.WithReason(func(error) string { return "redis_down" }), otelmetrics.WithBuckets([]float64{0.001, 0.01}))
	f.send(f.handler(t, newFailing("cache")), "192.0.2.1:1")
	got := f.collect(t)
	errs := got["ratelimit.store.errors"].Data.(metricdata.Sum[int64])
	if len(errs.DataPoints) != 1 {
		t.Fatalf("store errors: %d points, want 1", len(errs.DataPoints))
	}
	if v, _ := errs.DataPoints[0].Attributes.Value("ratelimit.reason"); v.AsString() != "redis_down" {
		t.Errorf("reason %q, want redis_down", v.AsString())
	}
	h := got["ratelimit.decision.duration"].Data.(metricdata.Histogram[float64])
	if b := h.DataPoints[0].Bounds; !slices.Equal(b, []float64{0.001, 0.01}) {
		t.Errorf("bounds %v, want [0.001 0.01]", b)
	}
	if ev := eventsOf(t, f.spans.Ended()[0]); len(ev) != 1 || ev[0]["ratelimit.reason"] != "redis_down" {
		t.Errorf("span events %v, want one with ratelimit.reason=redis_down", ev)
	}
}

// Past the caches' bounds, events are still counted, under the right
// policy and reason.
func TestManyPoliciesAndReasonsPastTheCache(t *testing.T) {
	f := newFixture(t, otelmetrics.WithReason(func(err error) string { return err.Error() }))
	const n = 300
	for i := range n {
		p := limiter.MustPolicy(fmt.Sprintf("p%d", i%3), limiter.PerMinute(int64(i+1)))
		f.m.Observe(middleware.Event{Policy: p, Outcome: middleware.Allowed})
		f.m.Observe(middleware.Event{Policy: p, Outcome: middleware.Allowed})
	}
	p := limiter.MustPolicy("cache", limiter.PerMinute(1))
	for i := range 100 {
		f.m.Observe(middleware.Event{Policy: p, Outcome: middleware.Error, Err: fmt.Errorf("r%d", i%2)})
	}
	got := f.collect(t)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.decisions",
		Description: "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				decisions("p0", "allowed")(200), decisions("p1", "allowed")(200), decisions("p2", "allowed")(200),
				decisions("cache", "error")(100),
			},
		},
	}, got["ratelimit.decisions"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	reasons := map[string]int64{}
	for _, dp := range got["ratelimit.store.errors"].Data.(metricdata.Sum[int64]).DataPoints {
		v, _ := dp.Attributes.Value("ratelimit.reason")
		reasons[v.AsString()] = dp.Value
	}
	if want := map[string]int64{"r0": 50, "r1": 50}; fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("store errors by reason = %v, want %v", reasons, want)
	}
}

// An outcome middleware does not name is counted under its String, and
// timed only if it carries a duration.
func TestUnknownOutcome(t *testing.T) {
	f := newFixture(t)
	p := limiter.MustPolicy("api", limiter.PerMinute(1))
	f.m.Observe(middleware.Event{Policy: p, Outcome: 200})
	f.m.Observe(middleware.Event{Policy: p, Outcome: 201, Duration: time.Millisecond})
	got := f.collect(t)
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.decisions",
		Description: "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints:  []metricdata.DataPoint[int64]{decisions("api", "unknown")(2)},
		},
	}, got["ratelimit.decisions"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	if h := got["ratelimit.decision.duration"].Data.(metricdata.Histogram[float64]); len(h.DataPoints) != 1 || h.DataPoints[0].Count != 1 {
		t.Errorf("duration points %+v, want one of count 1", h.DataPoints)
	}
}

// An in-flight cap is counted as a policy of its own, and
// ratelimit.in_flight holds the requests holding a slot; a hold is no
// answer time.
func TestInFlightCounter(t *testing.T) {
	f := newFixture(t)
	clk := limitertest.New(t0)
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := limiter.NewInFlight("exports", 1, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mw, err := middleware.New(l, middleware.WithInFlight(c, nil), middleware.WithObserver(f.m.Observe))
	if err != nil {
		t.Fatal(err)
	}
	inFlight := func() int64 {
		s, _ := f.collect(t)["ratelimit.in_flight"].Data.(metricdata.Sum[int64])
		for _, dp := range s.DataPoints {
			if v, _ := dp.Attributes.Value("ratelimit.policy"); v.AsString() == "exports" {
				return dp.Value
			}
		}
		return -1
	}
	var inside int64
	f.send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		inside = inFlight()
		clk.Advance(time.Minute)                                                                  // a long hold, which the histogram must not see
		f.send(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), "192.0.2.10:2") // refused by the cap
	})), "192.0.2.10:1")
	got := f.collect(t)
	if after := inFlight(); inside != 1 || after != 0 {
		t.Fatalf("in flight: %d inside the handler and %d after, want 1 and 0", inside, after)
	}
	if s := got["ratelimit.in_flight"].Data.(metricdata.Sum[int64]); s.IsMonotonic || len(s.DataPoints) != 1 {
		t.Errorf("ratelimit.in_flight: %+v, want one up-down series, the cap's", s)
	}
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name:        "ratelimit.decisions",
		Description: "Rate-limit decisions by policy and outcome (allowed, denied, shadow_denied, error, key_error, misconfigured, canceled, refunded, key_failed, released, settled).",
		Unit:        "{decision}",
		Data: metricdata.Sum[int64]{
			Temporality: metricdata.CumulativeTemporality,
			IsMonotonic: true,
			DataPoints: []metricdata.DataPoint[int64]{
				decisions("api", "allowed")(2),
				decisions("api", "refunded")(1),
				decisions("exports", "allowed")(1),
				decisions("exports", "denied")(1),
				decisions("exports", "released")(1),
			},
		},
	}, got["ratelimit.decisions"], metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars())
	for _, dp := range got["ratelimit.decision.duration"].Data.(metricdata.Histogram[float64]).DataPoints {
		if dp.Sum > 1 {
			t.Errorf("latency of %v: sum %vs, want no hold time in it", dp.Attributes, dp.Sum)
		}
	}
}

// The limiters a plan derives, one per plan and zone, share their
// policy's name and so its attributes: observing them allocates no more
// than observing the policy itself, however many there are.
func TestPlansShareTheirPolicysAttributes(t *testing.T) {
	f := newFixture(t)
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
	f.m.Observe(middleware.Event{Policy: l.Policy(), Outcome: middleware.Allowed})
	own := testing.AllocsPerRun(400, func() { f.m.Observe(middleware.Event{Policy: l.Policy(), Outcome: middleware.Allowed}) })
	i := 0
	if n := testing.AllocsPerRun(400, func() {
		f.m.Observe(middleware.Event{Policy: policies[i%len(policies)], Outcome: middleware.Allowed})
		i++
	}); n > own {
		t.Errorf("Observe of a plan's policy: %v allocations, want at most the policy's own %v", n, own)
	}
}
