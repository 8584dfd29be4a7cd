package metrics_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

// Count the decisions of a limit of 2 per client: three requests from one
// client, one from another. The limiter's clock is stopped so that the
// example cannot straddle a window's end; a server leaves the default
// system clock.
func ExampleNew() {
	reg := prometheus.NewRegistry() // a server would use prometheus.DefaultRegisterer
	m, err := metrics.New(reg)
	if err != nil {
		log.Fatal(err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerHour(2)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	mw, err := middleware.New(l, middleware.WithObserver(m.Observe))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, addr := range []string{"192.0.2.1:1", "192.0.2.1:2", "192.0.2.1:3", "192.0.2.2:1"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		h.ServeHTTP(httptest.NewRecorder(), r)
	}

	families, err := reg.Gather()
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			labels := ""
			for _, lp := range mt.GetLabel() {
				labels += fmt.Sprintf(" %s=%s", lp.GetName(), lp.GetValue())
			}
			switch {
			case mt.GetCounter() != nil && mt.GetCounter().GetValue() == 0: // outcomes not seen
			case mt.GetCounter() != nil:
				fmt.Printf("%s%s: %v\n", f.GetName(), labels, mt.GetCounter().GetValue())
			case mt.GetHistogram() != nil:
				fmt.Printf("%s%s: %d observations\n", f.GetName(), labels, mt.GetHistogram().GetSampleCount())
			}
		}
	}
	// Output:
	// ratelimit_decision_duration_seconds policy=api: 4 observations
	// ratelimit_decisions_total outcome=allowed policy=api: 3
	// ratelimit_decisions_total outcome=denied policy=api: 1
}
