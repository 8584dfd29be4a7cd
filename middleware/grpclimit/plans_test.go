package grpclimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
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
