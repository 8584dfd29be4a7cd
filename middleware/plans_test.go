package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A customer is an API key's plan and zone, as a service's own table
// holds them; the plan may change while the service runs.
type customers struct {
	mu sync.Mutex
	m  map[string][2]string // API key: plan name, zone
}

func (c *customers) set(key, plan, zone string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = [2]string{plan, zone}
}

// lookup is the middleware's WithPlans lookup over c and plans.
func (c *customers) lookup(plans map[string]*limiter.Plan) func(*http.Request) (*limiter.Plan, string, error) {
	return func(r *http.Request) (*limiter.Plan, string, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		pz := c.m[r.Header.Get("X-API-Key")]
		return plans[pz[0]], pz[1], nil
	}
}

// A planStores makes the stores of one test: a memory store, or n
// replicas' Redis stores on one Redis and one prefix.
type planStores struct {
	name     string
	replicas int
	redis    bool
	// serverClock decides with Redis's TIME (redisstore.WithServerClock)
	// instead of the limiter's clock.
	serverClock bool
}

var (
	planBackends = []planStores{{"memory", 1, false, false}, {"redis_three_replicas", 3, true, false}}
	// onServerClock is three replicas deciding by Redis's clock, which no
	// test can move: tests that cross a boundary on a fake clock check
	// the rest on it.
	onServerClock = planStores{"redis_three_replicas_server_clock", 3, true, true}
)

// stores returns each replica's store: memory, or Redis on one prefix.
func (b planStores) stores(t *testing.T) []limiter.Store {
	t.Helper()
	prefix := fmt.Sprintf("mwplans-%s-%d:", t.Name(), time.Now().UnixNano())
	var out []limiter.Store
	for range b.replicas {
		if b.redis {
			opts := []redisstore.Option{redisstore.WithPrefix(prefix)}
			if b.serverClock {
				opts = append(opts, redisstore.WithServerClock())
			}
			s, err := redisstore.New(redistest.Shared(t), opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			out = append(out, s)
			continue
		}
		s, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		out = append(out, s)
	}
	return out
}

// limiters returns, per replica, a limiter of each policy, on the
// replica's store and clk.
func (b planStores) limiters(t *testing.T, clk *limitertest.Clock, policies ...*limiter.Policy) [][]*limiter.Limiter {
	t.Helper()
	var out [][]*limiter.Limiter
	for _, store := range b.stores(t) {
		var ls []*limiter.Limiter
		for _, p := range policies {
			l, err := limiter.New(p, limiter.WithStore(store), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			ls = append(ls, l)
		}
		out = append(out, ls)
	}
	return out
}

// getKey sends a GET with apiKey through h.
func getKey(h http.Handler, apiKey string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/api", nil)
	r.RemoteAddr = "192.0.2.1:1"
	r.Header.Set("X-API-Key", apiKey)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestCustomersInFourZones: customers in Kolkata, New York, Paris and
// Auckland on one middleware (one per replica), one policy, "3 a month
// in the customer's zone": each is refused at their own month's end,
// X-RateLimit-Reset and the draft t at their own midnight, and admitted
// again at it, not a second before, while the others stay refused until
// theirs.
func TestCustomersInFourZones(t *testing.T) {
	zones := []string{"Pacific/Auckland", "Asia/Kolkata", "Europe/Paris", "America/New_York"} // in the order their Augusts begin
	start := time.Date(2026, 7, 31, 8, 0, 0, 0, time.UTC)                                     // July in all four
	for _, b := range planBackends {
		t.Run(b.name, func(t *testing.T) {
			clk := limitertest.New(start)
			api := limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC), limiter.PerMinute(100))
			free := &limiter.Plan{Name: "free", Limits: map[string][]int64{"api": {3, 100}}}
			cs := &customers{m: map[string][2]string{}}
			for _, z := range zones {
				cs.set(z, "free", z)
			}
			hw, err := headers.New(headers.WithDraftHeaders())
			if err != nil {
				t.Fatal(err)
			}
			var doors []http.Handler
			for _, ls := range b.limiters(t, clk, api) {
				doors = append(doors, newMiddleware(t, ls[0], middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
					middleware.WithPlans(cs.lookup(map[string]*limiter.Plan{"free": free})), middleware.WithHeaders(hw))(&okHandler{}))
			}
			n := 0
			next := func() http.Handler { n++; return doors[n%len(doors)] }
			for _, z := range zones {
				for i := range 3 {
					if w := getKey(next(), z); w.Code != http.StatusOK {
						t.Fatalf("%s request %d: %d", z, i+1, w.Code)
					}
				}
				loc := storetest.Zone(t, z)
				midnight := time.Date(2026, 8, 1, 0, 0, 0, 0, loc)
				w := getKey(next(), z)
				wantT := strconv.FormatInt(int64(midnight.Sub(start)/time.Second), 10)
				if w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Reset") != strconv.FormatInt(midnight.Unix(), 10) ||
					w.Header().Get("Retry-After") != wantT || !strings.Contains(w.Header().Get("RateLimit"), ";r=0;t="+wantT) {
					t.Fatalf("%s's 4th request: %d %v; want 429, reset at %v (%d), t=%s", z, w.Code, w.Header(), midnight, midnight.Unix(), wantT)
				}
			}
			for i, z := range zones {
				midnight := time.Date(2026, 8, 1, 0, 0, 0, 0, storetest.Zone(t, z))
				clk.Set(midnight.Add(-time.Second))
				if w := getKey(next(), z); w.Code != http.StatusTooManyRequests {
					t.Fatalf("%s a second before its midnight: %d, want 429", z, w.Code)
				}
				clk.Set(midnight)
				if w := getKey(next(), z); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "2" {
					t.Fatalf("%s at its midnight: %d %v, want 200 with 2 left", z, w.Code, w.Header())
				}
				for _, later := range zones[i+1:] {
					if w := getKey(next(), later); w.Code != http.StatusTooManyRequests {
						t.Fatalf("%s at %s's midnight: %d, want 429 until its own", later, z, w.Code)
					}
				}
			}
		})
	}
}

// TestCustomersInFourZonesOnServerClock: TestCustomersInFourZones on
// three replicas deciding by Redis's clock, whose own clocks are 20
// hours behind it, on it and 20 hours ahead: each customer is refused
// after 3, until the end of the month that holds Redis's time in their
// own zone, the others unaffected. Redis's clock cannot be moved to a
// month's end, so the crossing itself is TestCustomersInFourZones's (and
// redisstore's TestCalendarServerClockAcrossMidnight's, on a zone built
// to have its midnight in three seconds).
func TestCustomersInFourZonesOnServerClock(t *testing.T) {
	zones := []string{"Pacific/Auckland", "Asia/Kolkata", "Europe/Paris", "America/New_York"}
	redisNow := func() time.Time {
		now, err := redistest.Shared(t).Time(context.Background()).Result()
		if err != nil {
			t.Fatal(err)
		}
		return now
	}
	now := redisNow()
	api := limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC), limiter.PerMinute(100))
	free := &limiter.Plan{Name: "free", Limits: map[string][]int64{"api": {3, 100}}}
	cs := &customers{m: map[string][2]string{}}
	var doors []http.Handler
	for i, store := range onServerClock.stores(t) {
		clk := limitertest.New(now.Add(time.Duration(i-1) * 20 * time.Hour))
		l, err := limiter.New(api, limiter.WithStore(store), limiter.WithClock(clk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		doors = append(doors, newMiddleware(t, l, middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
			middleware.WithPlans(cs.lookup(map[string]*limiter.Plan{"free": free})))(&okHandler{}))
	}
	n := 0
	next := func() http.Handler { n++; return doors[n%len(doors)] }
	for _, z := range zones {
		loc := storetest.Zone(t, z)
		// A month of z that ends while its requests are sent (once a
		// month, for a few milliseconds) starts z again under a fresh key.
		for attempt := 0; ; attempt++ {
			key := z + "#" + strconv.Itoa(attempt)
			cs.set(key, "free", z)
			local := redisNow().In(loc)
			monthEnd := time.Date(local.Year(), local.Month()+1, 1, 0, 0, 0, 0, loc)
			var last *httptest.ResponseRecorder
			for i := range 4 {
				last = getKey(next(), key)
				if i < 3 && (last.Code != http.StatusOK || last.Header().Get("X-RateLimit-Remaining") != strconv.Itoa(2-i)) {
					if redisNow().Before(monthEnd) {
						t.Fatalf("%s request %d: %d %v, want 200 with %d left", z, i+1, last.Code, last.Header(), 2-i)
					}
				}
			}
			if !redisNow().Before(monthEnd) {
				continue
			}
			if last.Code != http.StatusTooManyRequests || last.Header().Get("X-RateLimit-Reset") != strconv.FormatInt(monthEnd.Unix(), 10) {
				t.Fatalf("%s's 4th request: %d %v; want 429, reset at %v (%d)", z, last.Code, last.Header(), monthEnd, monthEnd.Unix())
			}
			break
		}
	}
}

// TestUpgradeKeepsRequestsAndTokens: a customer of the free plan who
// spent its 3 requests and went past its 1,000 tokens (into debt) is
// moved to pro mid-month: pro's limits apply to what was used, requests
// and tokens alike, on every replica; on Redis's clock too, the
// replicas' clocks months from it.
func TestUpgradeKeepsRequestsAndTokens(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	start := time.Date(2026, 7, 15, 12, 0, 0, 0, paris)
	for _, b := range append(planBackends, onServerClock) {
		t.Run(b.name, func(t *testing.T) {
			clk := limitertest.New(start)
			api := limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC))
			tokens := limiter.MustPolicy("tokens", limiter.PerMonthIn(100_000, time.UTC)).MustUnit("acme-tokens")
			plans := map[string]*limiter.Plan{
				"free": {Name: "free", Limits: map[string][]int64{"api": {3}, "tokens": {1_000}}},
				"pro":  {Name: "pro", Limits: map[string][]int64{"api": {10}, "tokens": {5_000}}},
			}
			cs := &customers{m: map[string][2]string{"acme": {"free", "Europe/Paris"}}}
			reports := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { middleware.Report(r.Context(), "acme-tokens", 400) })
			var doors []http.Handler
			replicas := b.limiters(t, clk, api, tokens)
			for _, ls := range replicas {
				doors = append(doors, newMiddleware(t, ls[0], middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
					middleware.WithReported(ls[1], nil, nil), middleware.WithPlans(cs.lookup(plans)))(reports))
			}
			for i, want := range []int{200, 200, 200, 429} {
				if w := getKey(doors[i%len(doors)], "acme"); w.Code != want {
					t.Fatalf("free request %d: %d, want %d", i+1, w.Code, want)
				}
			}
			cs.set("acme", "pro", "Europe/Paris")
			for i := range 3 {
				w := getKey(doors[(i+1)%len(doors)], "acme")
				if left := strconv.Itoa(10 - 3 - i - 1); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != left {
					t.Fatalf("pro request %d: %d, remaining %q; want 200, %s (the 3 free ones counted)", i+1, w.Code, w.Header().Get("X-RateLimit-Remaining"), left)
				}
			}
			key := "hdr:X-Api-Key:acme"
			for i, want := range []int64{6, 2_400} { // requests, tokens
				l, err := replicas[len(replicas)-1][i].For(plans["pro"], "Europe/Paris")
				if err != nil {
					t.Fatal(err)
				}
				u, err := l.Usage(context.Background(), key)
				if err != nil || u.Windows[0].Used != want || u.Windows[0].Limit != plans["pro"].Limits[l.Policy().Name()][0] {
					t.Fatalf("%s under pro: %+v, %v; want %d used of pro's limit", l.Policy().Name(), u, err, want)
				}
			}
		})
	}
}

// TestCapsPerPlan: one middleware caps a free customer at 2 exports at
// once and a pro one at 10, the cap's own maximum being neither.
func TestCapsPerPlan(t *testing.T) {
	for _, b := range planBackends {
		t.Run(b.name, func(t *testing.T) {
			clk := limitertest.New(t0)
			api := limiter.MustPolicy("api", limiter.PerMinute(1000))
			plans := map[string]*limiter.Plan{
				"free": {Name: "free", Caps: map[string]int64{"exports": 2}},
				"pro":  {Name: "pro", Caps: map[string]int64{"exports": 10}},
			}
			cs := &customers{m: map[string][2]string{"ann": {"free", ""}, "bob": {"pro", ""}}}
			release := make(chan struct{})
			var entered sync.WaitGroup
			hold := http.HandlerFunc(func(http.ResponseWriter, *http.Request) { entered.Done(); <-release })
			var doors []http.Handler
			for _, store := range b.stores(t) {
				l, err := limiter.New(api, limiter.WithStore(store), limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				exports, err := limiter.NewInFlight("exports", 5, limiter.WithStore(store), limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = exports.Close() })
				doors = append(doors, newMiddleware(t, l, middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
					middleware.WithInFlight(exports, nil), middleware.WithPlans(cs.lookup(plans)))(hold))
			}
			var done sync.WaitGroup
			for _, c := range []struct {
				key string
				max int
			}{{"ann", 2}, {"bob", 10}} {
				for i := range c.max {
					entered.Add(1)
					done.Add(1)
					go func() { defer done.Done(); getKey(doors[i%len(doors)], c.key) }()
				}
				entered.Wait()
				w := getKey(doors[0], c.key)
				if w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "concurrency") {
					t.Fatalf("%s's export %d: %d %q, want 429 from the cap", c.key, c.max+1, w.Code, w.Body)
				}
			}
			close(release)
			done.Wait()
		})
	}
}
