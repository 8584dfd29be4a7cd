package otelmetrics_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/metric/metricdata/metricdatatest"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/otelmetrics"
)

// TestObservePlanCache: three requests of one plan in one zone and one
// in another zone, through a middleware whose plan cache is observed:
// two resolutions kept, two misses (the first of each), two hits.
func TestObservePlanCache(t *testing.T) {
	f := newFixture(t)
	c, err := middleware.NewPlanCache(64)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.m.ObservePlanCache("api", c); err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(100)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	pro := &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {1_000}}}
	zone := "Europe/Paris"
	mw, err := middleware.New(l, middleware.WithObserver(f.m.Observe),
		middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) { return pro, zone, nil }), middleware.WithPlanCache(c))
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 3 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))
	}
	zone = "Asia/Tokyo"
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil))

	attrs := attribute.NewSet(attribute.String("ratelimit.plan.cache", "api"))
	got := f.collect(t)
	opts := []metricdatatest.Option{metricdatatest.IgnoreTimestamp(), metricdatatest.IgnoreExemplars()}
	metricdatatest.AssertEqual(t, metricdata.Metrics{
		Name: "ratelimit.plan.resolutions", Unit: "{resolution}",
		Description: "Plan and zone resolutions a plan cache keeps (middleware.WithPlans).",
		Data:        metricdata.Gauge[int64]{DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Value: 2}}},
	}, got["ratelimit.plan.resolutions"], opts...)
	for name, v := range map[string]int64{"hits": 2, "misses": 2} {
		desc := "Requests whose plan and zone a plan cache had resolved."
		if name == "misses" {
			desc = "Requests whose plan and zone a plan cache resolved then: each one a resolution."
		}
		metricdatatest.AssertEqual(t, metricdata.Metrics{
			Name: "ratelimit.plan.resolution." + name, Unit: "{request}", Description: desc,
			Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{Attributes: attrs, Value: v}}},
		}, got["ratelimit.plan.resolution."+name], opts...)
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
			if err := f.m.ObservePlanCache(tc.cache, tc.c); !errors.Is(err, otelmetrics.ErrInvalidOption) {
				t.Fatalf("ObservePlanCache(%q, %v) = %v, want ErrInvalidOption", tc.cache, tc.c, err)
			}
		})
	}
}
