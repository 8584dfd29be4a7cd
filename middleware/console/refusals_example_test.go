package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// The doors' observer feeds a Refusals, and the console shows what it
// saw: a customer refused at 03:12 is looked up at 03:20, when the
// minute that refused it is long over.
func ExampleRefusals() {
	clk := limitertest.New(time.Date(2026, 7, 31, 3, 12, 30, 0, time.UTC))
	api := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(3)), limiter.WithClock(clk))
	defer api.Close()
	refusals, err := console.NewRefusals(console.RefusalsConfig{}) // add Redis (and KeyHash) to share across replicas
	if err != nil {
		panic(err)
	}
	defer refusals.Close()
	limit, err := middleware.New(api, middleware.WithObserver(refusals.Observe))
	if err != nil {
		panic(err)
	}
	h, err := console.New(console.Config{
		Authorize: func(r *http.Request) (string, console.Access) { return "bob", console.Look },
		Observe:   func(console.Event) {},
		Limiters:  []*limiter.Limiter{api},
		Refusals:  refusals,
	})
	if err != nil {
		panic(err)
	}
	service := limit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for range 5 {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "203.0.113.7:4000"
		service.ServeHTTP(httptest.NewRecorder(), r)
	}

	clk.Set(time.Date(2026, 7, 31, 3, 20, 0, 0, time.UTC))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin/limits/usage?key=203.0.113.7", nil))
	var rep struct {
		Refused struct {
			Runs []struct {
				Policy, Window, From, To, First, Last string
				Count                                 int
			}
		}
	}
	_ = json.NewDecoder(w.Body).Decode(&rep)
	for _, run := range rep.Refused.Runs {
		fmt.Printf("%s %s: %d refused from %s to %s, in the window %s to %s\n", run.Policy, run.Window, run.Count, run.First, run.Last, run.From, run.To)
	}
	// Output:
	// api 1m0s: 2 refused from 2026-07-31T03:12:30Z to 2026-07-31T03:12:30Z, in the window 2026-07-31T03:12:00Z to 2026-07-31T03:13:00Z
}
