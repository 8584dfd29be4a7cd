package grpclimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestPlansOnBothDoors: the same plans through the HTTP middleware and
// the interceptor, over the same limiters, count one usage: a customer in
// Auckland on free (3 a month in their zone) spends 2 over HTTP and 1
// over gRPC, is refused by both with the reset at Auckland's midnight,
// and, moved to pro, gets pro's limit through both on what was used.
func TestPlansOnBothDoors(t *testing.T) {
	auckland := storetest.Zone(t, "Pacific/Auckland")
	start := time.Date(2026, 7, 31, 20, 0, 0, 0, auckland)
	api, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC)), start)
	plans := map[string]*limiter.Plan{
		"free": {Name: "free", Limits: map[string][]int64{"api": {3}}},
		"pro":  {Name: "pro", Limits: map[string][]int64{"api": {10}}},
	}
	var (
		mu      sync.Mutex
		planOf  = map[string]string{"key-kiwi": "free"}
		zone    = "Pacific/Auckland"
		planFor = func(key string) *limiter.Plan { mu.Lock(); defer mu.Unlock(); return plans[planOf[key]] }
	)
	mw, err := middleware.New(api, middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
		middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
			return planFor(r.Header.Get("X-API-Key")), zone, nil
		}))
	if err != nil {
		t.Fatal(err)
	}
	web := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ic := newInterceptor(t, api, grpclimit.WithKey(grpclimit.Must(grpclimit.Metadata("x-api-key"))),
		grpclimit.WithPlans(func(ctx context.Context, _ string) (*limiter.Plan, string, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			return planFor(one(t, md, "x-api-key")), zone, nil
		}))
	client := serve(t, interceptors(ic)...)
	httpCall := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set("X-API-Key", "key-kiwi")
		w := httptest.NewRecorder()
		web.ServeHTTP(w, r)
		return w
	}
	for i := range 2 {
		if w := httpCall(); w.Code != http.StatusOK {
			t.Fatalf("HTTP request %d: %d", i+1, w.Code)
		}
	}
	if a := check(t, client, "x-api-key", "key-kiwi"); a.code != codes.OK || one(t, a.header, "x-ratelimit-remaining") != "0" {
		t.Fatalf("the gRPC call: %v %v, want OK with nothing left of free's 3", a.st, a.header)
	}
	midnight := strconv.FormatInt(time.Date(2026, 8, 1, 0, 0, 0, 0, auckland).Unix(), 10)
	if a := check(t, client, "x-api-key", "key-kiwi"); a.code != codes.ResourceExhausted || one(t, a.trailer, "x-ratelimit-reset") != midnight {
		t.Fatalf("gRPC past free's 3: %v %v, want RESOURCE_EXHAUSTED, reset %s (Auckland's midnight)", a.st, a.trailer, midnight)
	}
	if w := httpCall(); w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Reset") != midnight {
		t.Fatalf("HTTP past free's 3: %d %v, want 429, reset %s", w.Code, w.Header(), midnight)
	}
	mu.Lock()
	planOf["key-kiwi"] = "pro"
	mu.Unlock()
	if a := check(t, client, "x-api-key", "key-kiwi"); a.code != codes.OK || one(t, a.header, "x-ratelimit-remaining") != "6" {
		t.Fatalf("gRPC on pro: %v %v, want OK with 6 of 10 left", a.st, a.header)
	}
	if w := httpCall(); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "5" {
		t.Fatalf("HTTP on pro: %d %v, want 200 with 5 of 10 left", w.Code, w.Header())
	}
}

// TestPlanCacheSharedByBothDoors: one PlanCache bounds and counts the
// resolutions of a middleware, an interceptor and its methods
// (WithMethods): each door resolves a plan once, then finds it.
func TestPlanCacheSharedByBothDoors(t *testing.T) {
	api, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMonthIn(1000, time.UTC)), time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC))
	other, _ := newLimiter(t, limiter.MustPolicy("other", limiter.PerMinute(1000)), time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC))
	pro := &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {10}, "other": {5}}}
	cache, err := middleware.NewPlanCache(64)
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(context.Context, string) (*limiter.Plan, string, error) { return pro, "Europe/Paris", nil }
	mw, err := middleware.New(api, middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) { return pro, "Europe/Paris", nil }),
		middleware.WithPlanCache(cache))
	if err != nil {
		t.Fatal(err)
	}
	web := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	ic := newInterceptor(t, api, grpclimit.WithPlans(lookup), grpclimit.WithPlanCache(cache),
		grpclimit.WithMethods(map[string]middleware.Limiter{"/grpc.health.v1.Health/Watch": other}))
	client := serve(t, interceptors(ic)...)
	for i := range 3 {
		w := httptest.NewRecorder()
		web.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		if w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Limit") != "10" {
			t.Fatalf("HTTP request %d: %d %v, want 200 under pro's 10", i+1, w.Code, w.Header())
		}
		if a := check(t, client); a.code != codes.OK || one(t, a.header, "x-ratelimit-limit") != "10" {
			t.Fatalf("gRPC call %d: %v %v, want OK under pro's 10", i+1, a.st, a.header)
		}
	}
	// Two doors, one resolution each (the methods' door unused), the
	// first request of each a miss and the next two hits.
	if st := cache.Stats(); st.Kept != 2 || st.Misses != 2 || st.Hits != 4 || st.Bound != 64 {
		t.Fatalf("Stats() = %+v, want 2 kept of 64, 2 misses, 4 hits", st)
	}
}

// TestPlanCacheOptionChecked: WithPlanCache(nil), and WithPlanCache
// without WithPlans, are configuration errors.
func TestPlanCacheOptionChecked(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(10)), time.Date(2026, 7, 15, 12, 0, 0, 0, time.UTC))
	cache, err := middleware.NewPlanCache(8)
	if err != nil {
		t.Fatal(err)
	}
	lookup := grpclimit.WithPlans(func(context.Context, string) (*limiter.Plan, string, error) { return nil, "", nil })
	for _, tc := range []struct {
		name string
		opts []grpclimit.Option
		want string
	}{
		{"nil", []grpclimit.Option{lookup, grpclimit.WithPlanCache(nil)}, "WithPlanCache(nil)"},
		{"no plans", []grpclimit.Option{grpclimit.WithPlanCache(cache)}, "WithPlanCache needs WithPlans"},
	} {
		_, err := grpclimit.New(l, tc.opts...)
		if !errors.Is(err, grpclimit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New: %v, want ErrInvalidOption naming %q", tc.name, err, tc.want)
		}
	}
}
