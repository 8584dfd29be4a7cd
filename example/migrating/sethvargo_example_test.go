package migrating

import (
	"context"
	"time"

	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Example_sethvargo: go-limiter's memorystore (3 tokens an hour) under
// httplimit.IPKeyFunc() becomes middleware.ByIP(3, time.Hour). Both
// refill the whole budget at an interval; go-limiter's intervals start
// at the client's first request, ours at the clock's hour. go-limiter
// writes X-RateLimit-Reset and Retry-After as RFC 1123 dates in "UTC",
// which a strict HTTP-date parser (http.ParseTime, which wants "GMT")
// rejects; ours writes Unix seconds and a number of seconds. IPKeyFunc("X-Forwarded-For")
// keys by the whole header as the client sent it; keyfunc.TrustedProxy
// reads it from the right (see Example_forwardedFor).
func Example_sethvargo() {
	store, err := memorystore.New(&memorystore.Config{Tokens: 3, Interval: time.Hour})
	if err != nil {
		panic(err)
	}
	defer store.Close(context.Background())
	mw, err := httplimit.NewMiddleware(store, httplimit.IPKeyFunc())
	if err != nil {
		panic(err)
	}
	old := mw.Handle(ok)

	clk := limitertest.New(noon30)
	ours := middleware.ByIP(3, time.Hour, limiter.WithClock(clk))(ok)

	report("go-limiter", ask(old, "192.0.2.1", 4))
	report("fixedwindow", ask(ours, "192.0.2.1", 4))
	// Output:
	// go-limiter
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: an RFC 1123 date that is no HTTP date (UTC, not GMT)
	// fixedwindow
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Cache-Control Content-Length Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 3570 (seconds)
}
