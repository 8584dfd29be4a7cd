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

// Plans over one usage: the free plan is the limiter given to New, pro
// the same limiter under other limits (WithLimits), so a customer moved
// from free to pro keeps what they used: 3 of free's 3 spent in the
// minute, pro's 5 leave them 2.
func ExampleWithResolver_plans() {
	loc := time.UTC
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	clk := limitertest.New(time.Date(2026, 12, 3, 9, 30, 0, 0, loc))
	usage := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMonthIn(1000, loc), limiter.PerMinute(3)), limiter.WithStore(store), limiter.WithClock(clk))
	defer usage.Close()
	pro, err := usage.WithLimits(100_000, 5) // the same counters, pro's limits
	if err != nil {
		log.Fatal(err)
	}
	plan := map[string]string{"key-acme": "free"}
	isPro := func(r *http.Request) bool { return plan[r.Header.Get("X-API-Key")] == "pro" }
	apiKey := keyfunc.Must(keyfunc.Header("X-API-Key"))
	mw, err := middleware.New(usage, middleware.WithKey(apiKey), middleware.WithResolver(func(r *http.Request) middleware.Limiter {
		if isPro(r) {
			return pro
		}
		return nil // New's limiter: the free plan
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
