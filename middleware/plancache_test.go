package middleware_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/testfixture"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// bytesPerRequest returns the bytes the heap grew by per request, over n
// requests made by serve(i): runtime.MemStats' TotalAlloc, which counts
// every allocation and is no timing.
func bytesPerRequest(n int, serve func(i int)) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		serve(i)
	}
	runtime.ReadMemStats(&after)
	return float64(after.TotalAlloc-before.TotalAlloc) / float64(n)
}

// scaleServer is a middleware of the scale policy (a month in each
// customer's zone over a minute) whose lookup answers the pair at, on a
// limiter and a PlanCache keeping n resolutions each.
type scaleServer struct {
	h     http.Handler
	at    int
	plans []*limiter.Plan
	zones []string
	cache *middleware.PlanCache
	reqs  []*http.Request
	w     *benchWriter
}

func newScaleServer(t *testing.T, n int, plans []*limiter.Plan, zones []string) *scaleServer {
	t.Helper()
	l, err := limiter.New(scalePolicy(), limiter.WithClock(newFakeClock(t0)), limiter.WithResolutions(n))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c, err := middleware.NewPlanCache(n)
	if err != nil {
		t.Fatal(err)
	}
	s := &scaleServer{plans: plans, zones: zones, cache: c, reqs: clientRequests(64), w: &benchWriter{h: make(http.Header, 8)}}
	lookup := func(*http.Request) (*limiter.Plan, string, error) { return s.plans[s.at], s.zones[s.at], nil }
	s.h = newMiddleware(t, l, middleware.WithPlans(lookup), middleware.WithPlanCache(c))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	return s
}

// serve answers pair i of the rotation.
func (s *scaleServer) serve(i int) {
	s.at = i % len(s.plans)
	clear(s.w.h)
	s.h.ServeHTTP(s.w, s.reqs[i%len(s.reqs)])
}

// TestPlansAtScaleAllocateAsFew is issue 44's bound: with 100,000 plan
// and zone pairs in rotation a request allocates at most what it does
// with 4, plus 64 B, and as many times.
func TestPlansAtScaleAllocateAsFew(t *testing.T) {
	loads := scaleLoadsOnce(t)
	perRequest := func(name string) (float64, float64) {
		ld := loads[name]
		s := newScaleServer(t, 1<<17, ld.Plans, ld.Zones)
		for i := range ld.Plans { // resolve every pair once
			s.serve(i)
		}
		if s.w.notOK > 0 {
			t.Fatalf("%s: %d requests not answered 200", name, s.w.notOK)
		}
		i := 0
		allocs := testing.AllocsPerRun(len(ld.Plans), func() { s.serve(i); i++ })
		b := bytesPerRequest(len(ld.Plans), s.serve)
		// Two choices of eight slots each keep all but a few of 100,000
		// in 131,072 (4 in the run that wrote this).
		if st := s.cache.Stats(); st.Kept < int64(len(ld.Plans))*999/1000 {
			t.Errorf("%s: kept %d resolutions after %d pairs, want 99.9 %% of them", name, st.Kept, len(ld.Plans))
		}
		return allocs, b
	}
	a4, b4 := perRequest("pairs=4")
	a, b := perRequest("pairs=100000")
	t.Logf("4 pairs: %v allocations, %.0f B a request; 100,000 pairs: %v, %.0f B", a4, b4, a, b)
	if a > a4 || b > b4+64 {
		t.Errorf("100,000 pairs: %v allocations and %.0f B a request; want at most 4 pairs' %v and %.0f B + 64", a, b, a4, b4)
	}
}

// TestPlansBadInput: a lookup that answers a new plan with new limits
// per request, and a hostile zone per request, through 64 resolutions:
// the cache stays within its bound, a request's allocations do not grow
// with what came before, and no eviction changes a count: a customer
// whose plan allows 5 a month is refused at the 6th, however many plans
// came between.
func TestPlansBadInput(t *testing.T) {
	zones, err := testfixture.Zones()
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(t0)
	l, err := limiter.New(scalePolicy(), limiter.WithClock(clk), limiter.WithResolutions(64))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c, err := middleware.NewPlanCache(64)
	if err != nil {
		t.Fatal(err)
	}
	var plan *limiter.Plan
	var zone string
	lookup := func(*http.Request) (*limiter.Plan, string, error) { return plan, zone, nil }
	var misconfigured int
	h := newMiddleware(t, l, middleware.WithPlans(lookup), middleware.WithPlanCache(c), middleware.WithObserver(func(e middleware.Event) {
		if e.Outcome == middleware.Misconfigured && errors.Is(e.Err, limiter.ErrInvalidPolicy) {
			misconfigured++
		}
	}))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func(key string) int {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = key + ":1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	flood := 0 // each flood request a plan never seen, in one of every zone
	floodPlan := func() {
		plan = &limiter.Plan{Name: "flood", Limits: map[string][]int64{"scale": {1_000_000 + int64(flood), 1_000_000}}}
		zone = zones[flood%len(zones)]
		flood++
	}
	// The customer of 5 a month in Kolkata, a fresh *Plan per request,
	// 200 flood requests between each two of theirs.
	for i := range 6 {
		for range 200 {
			floodPlan()
			if code := serve("192.0.2.9"); code != http.StatusOK {
				t.Fatalf("flood request %d: %d, want 200", flood, code)
			}
		}
		plan = &limiter.Plan{Name: "five", Limits: map[string][]int64{"scale": {5, 1_000}}}
		zone = "Asia/Kolkata"
		want := http.StatusOK
		if i == 5 {
			want = http.StatusTooManyRequests
		}
		if code := serve("192.0.2.1"); code != want {
			t.Fatalf("the customer's request %d after %d flood plans: %d, want %d", i+1, flood, code, want)
		}
	}
	if st := c.Stats(); st.Kept > st.Bound || st.Bound != 64 {
		t.Fatalf("Stats() = %+v: want at most its bound, 64", st)
	}
	// Allocations per request after 1,200 plans and after 21,200: alike.
	early := bytesPerRequest(1000, func(int) { floodPlan(); serve("192.0.2.9") })
	for range 20_000 {
		floodPlan()
		serve("192.0.2.9")
	}
	late := bytesPerRequest(1000, func(int) { floodPlan(); serve("192.0.2.9") })
	if late > early+64 {
		t.Errorf("a new plan per request: %.0f B a request after 21,200 plans, %.0f B after 1,200; want no growth past 64 B", late, early)
	}
	// A hostile zone per request: answered 500, nothing kept.
	kept := c.Stats().Kept
	plan = &limiter.Plan{Name: "five", Limits: map[string][]int64{"scale": {5, 1_000}}}
	hostile := func(i int) {
		zone = "Hostile/Zone" + strconv.Itoa(i)
		if code := serve("192.0.2.2"); code != http.StatusInternalServerError {
			t.Fatalf("zone %s: %d, want 500", zone, code)
		}
	}
	early = bytesPerRequest(500, hostile)
	for i := range 5_000 {
		hostile(500 + i)
	}
	late = bytesPerRequest(500, func(i int) { hostile(10_000 + i) })
	// Each costs a failed time.LoadLocation (about 49 KB, the tz
	// database's directory read again: calendar.Zone keeps no failure),
	// which varies by a few hundred bytes under -race: 1 % of it.
	if late > early+early/100+64 {
		t.Errorf("a hostile zone per request: %.0f B a request after 6,000 zones, %.0f B after 500; want no growth past 1 %% + 64 B", late, early)
	}
	if st := c.Stats(); st.Kept != kept {
		t.Errorf("hostile zones kept %d resolutions, want %d as before", st.Kept, kept)
	}
	if misconfigured != 6_000 {
		t.Errorf("%d Misconfigured events for 6,000 hostile zones", misconfigured)
	}
}

// TestPlanChangedTakesEffect: a plan is its contents, so the same *Plan
// changed between two requests applies its new limits at the second,
// and a fresh *Plan equal to it finds its resolution.
func TestPlanChangedTakesEffect(t *testing.T) {
	l, err := limiter.New(scalePolicy(), limiter.WithClock(newFakeClock(t0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	c, err := middleware.NewPlanCache(64)
	if err != nil {
		t.Fatal(err)
	}
	plan := &limiter.Plan{Name: "p", Limits: map[string][]int64{"scale": {2, 1_000}}}
	fresh := false
	lookup := func(*http.Request) (*limiter.Plan, string, error) {
		if fresh {
			return &limiter.Plan{Name: "p", Limits: map[string][]int64{"scale": {plan.Limits["scale"][0], 1_000}}}, "Europe/Paris", nil
		}
		return plan, "Europe/Paris", nil
	}
	h := newMiddleware(t, l, middleware.WithPlans(lookup), middleware.WithPlanCache(c))(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	serve := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		return w.Code
	}
	for i, want := range []int{200, 200, 429} {
		if code := serve(); code != want {
			t.Fatalf("request %d under 2 a month: %d, want %d", i+1, code, want)
		}
	}
	plan.Limits["scale"] = []int64{4, 1_000}
	fresh = true
	for i, want := range []int{200, 200, 429} {
		if code := serve(); code != want {
			t.Fatalf("request %d after the plan became 4 a month: %d, want %d (2 used before, refusals not charged)", i+4, code, want)
		}
	}
	if st := c.Stats(); st.Kept != 2 || st.Misses != 2 || st.Hits != 4 {
		t.Fatalf("Stats() = %+v, want 2 kept (2 and 4 a month), 2 misses, 4 hits", st)
	}
}
