package middleware_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Plans over one usage: free and pro are limits of one policy, so a
// customer moved from free to pro keeps what they used: 3 of free's 3
// spent in the minute, pro's 5 leave them 2.
func ExampleWithPlans_upgrade() {
	loc := time.UTC
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	clk := limitertest.New(time.Date(2026, 12, 3, 9, 30, 0, 0, loc))
	usage := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMonthIn(1000, loc), limiter.PerMinute(3)), limiter.WithStore(store), limiter.WithClock(clk))
	defer usage.Close()
	plans := map[string]*limiter.Plan{
		"free": {Name: "free"}, // the policy's own limits
		"pro":  {Name: "pro", Limits: map[string][]int64{"api": {100_000, 5}}},
	}
	plan := map[string]string{"key-acme": "free"} // the customers' plans
	apiKey := keyfunc.Must(keyfunc.Header("X-API-Key"))
	mw, err := middleware.New(usage, middleware.WithKey(apiKey), middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
		return plans[plan[r.Header.Get("X-API-Key")]], "", nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(hello)
	for range 4 {
		show(h, "192.0.2.1:1", "X-API-Key", "key-acme")
	}
	plan["key-acme"] = "pro" // upgraded within the minute
	for range 3 {
		show(h, "192.0.2.1:1", "X-API-Key", "key-acme")
	}
	pro, err := usage.For(plans["pro"], "") // the same counters, pro's limits
	if err != nil {
		log.Fatal(err)
	}
	u, err := pro.Usage(context.Background(), "hdr:X-Api-Key:key-acme") // the key keyfunc.Header makes
	fmt.Println(u.Windows[0].Used, "of", u.Windows[0].Limit, "this month", err)
	// Output:
	// 200 limit=3 remaining=2 retry-after=""
	// 200 limit=3 remaining=1 retry-after=""
	// 200 limit=3 remaining=0 retry-after=""
	// 429 limit=3 remaining=0 retry-after="60"
	// 200 limit=5 remaining=1 retry-after=""
	// 200 limit=5 remaining=0 retry-after=""
	// 429 limit=5 remaining=0 retry-after="60"
	// 5 of 100000 this month <nil>
}
