package metrics_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

// TestObservePlanCache: three requests of one plan in one zone and one
// in another zone, through a middleware whose plan cache is observed:
// two resolutions kept, two misses (the first of each), two hits.
func TestObservePlanCache(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := metrics.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := middleware.NewPlanCache(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ObservePlanCache("api", c); err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(100)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	pro := &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {1_000}}}
	zone := "Europe/Paris"
	h := newHandler(t, m, l, middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) { return pro, zone, nil }), middleware.WithPlanCache(c))
	for range 3 {
		send(h, "192.0.2.1:1")
	}
	zone = "Asia/Tokyo"
	send(h, "192.0.2.1:1")
	want := `
# HELP ratelimit_plan_resolution_hits_total Requests whose plan and zone a plan cache had resolved.
# TYPE ratelimit_plan_resolution_hits_total counter
ratelimit_plan_resolution_hits_total{cache="api"} 2
# HELP ratelimit_plan_resolution_misses_total Requests whose plan and zone a plan cache resolved then: each one a resolution.
# TYPE ratelimit_plan_resolution_misses_total counter
ratelimit_plan_resolution_misses_total{cache="api"} 2
# HELP ratelimit_plan_resolutions Plan and zone resolutions a plan cache keeps (middleware.WithPlans).
# TYPE ratelimit_plan_resolutions gauge
ratelimit_plan_resolutions{cache="api"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "ratelimit_plan_resolutions", "ratelimit_plan_resolution_hits_total", "ratelimit_plan_resolution_misses_total"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		cache string
		c     *middleware.PlanCache
	}{
		{"empty_name", "", c},
		{"nil_cache", "other", nil},
		{"name_taken", "api", c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := m.ObservePlanCache(tc.cache, tc.c); !errors.Is(err, metrics.ErrInvalidOption) {
				t.Fatalf("ObservePlanCache(%q, %v) = %v, want ErrInvalidOption", tc.cache, tc.c, err)
			}
		})
	}
}
