package migrating

import (
	"time"

	ulule "github.com/ulule/limiter/v3"
	"github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	"github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Example_ulule: ulule/limiter's "3-H" on its memory store and stdlib
// middleware becomes middleware.ByIP(3, time.Hour). Both count a fixed
// window; ulule's starts at the client's first request, ours at the
// clock's hour, the same for every client. ulule's refusal carries no
// Retry-After; ours always does. Behind a proxy, ulule's
// TrustForwardHeader reads the leftmost X-Forwarded-For, which the client
// writes; keyfunc.TrustedProxy reads from the right (see
// Example_forwardedFor).
func Example_ulule() {
	old := stdlib.NewMiddleware(ulule.New(memory.NewStore(), ulule.Rate{Period: time.Hour, Limit: 3})).Handler(ok)

	clk := limitertest.New(noon30)
	ours := middleware.ByIP(3, time.Hour, limiter.WithClock(clk))(ok)

	report("ulule", ask(old, "192.0.2.1", 4))
	report("fixedwindow", ask(ours, "192.0.2.1", 4))
	// Output:
	// ulule
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: (none)
	// fixedwindow
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Cache-Control Content-Length Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 3570 (seconds)
}
