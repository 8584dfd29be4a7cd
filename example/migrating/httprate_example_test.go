package migrating

import (
	"time"

	"github.com/go-chi/httprate"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Example_httprate: httprate.LimitByIP(3, time.Hour) becomes
// middleware.ByIP(3, time.Hour). The same header names, the same
// statuses and the same counts within a window; httprate's window starts
// when the limiter is built and weighs the previous window's count into
// the current one (a sliding estimate), ours is the clock's hour, so a
// client may spend two budgets across its boundary. On a refusal
// httprate's Retry-After is always the window's length (3600), ours the
// seconds until the window ends (3570 at 12:00:30). httprate answers a
// key function's error with 428, ours with 400 (no key) or 500.
func Example_httprate() {
	//lint:ignore SA1019 the setup most services have, which this recipe replaces
	old := httprate.LimitByIP(3, time.Hour)(ok)

	clk := limitertest.New(noon30)
	ours := middleware.ByIP(3, time.Hour, limiter.WithClock(clk))(ok)

	report("httprate", ask(old, "192.0.2.1", 4))
	report("fixedwindow", ask(ours, "192.0.2.1", 4))
	// Output:
	// httprate
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 3600 (seconds)
	// fixedwindow
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Cache-Control Content-Length Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 3570 (seconds)
}
