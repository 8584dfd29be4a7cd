package migrating

import (
	"time"

	"github.com/throttled/throttled/v2"
	"github.com/throttled/throttled/v2/store/memstore"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Example_throttled: throttled's GCRA at 60 an hour with MaxBurst 2
// (3 at once, then one a minute) is a token bucket: its equivalent is a
// window of the burst, 3, over the time the rate takes to earn it,
// 3 minutes (see Example_tokenBucket for what that keeps and what it
// does not). throttled writes X-RateLimit-Reset as seconds from now;
// ours writes the Unix second the window ends, as httprate and ulule
// do. Both send Retry-After in seconds.
func Example_throttled() {
	store, err := memstore.NewCtx(65536)
	if err != nil {
		panic(err)
	}
	gcra, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerHour(60), MaxBurst: 2})
	if err != nil {
		panic(err)
	}
	old := (&throttled.HTTPRateLimiterCtx{RateLimiter: gcra, VaryBy: &throttled.VaryBy{RemoteAddr: true}}).RateLimit(ok)

	clk := limitertest.New(noon30)
	l := limiter.MustNew(limiter.MustPolicy("api", limiter.Rate{Limit: 3, Window: 3 * time.Minute}), limiter.WithClock(clk))
	defer l.Close()
	ours := middleware.MustNew(l)(ok)

	report("throttled", ask(old, "192.0.2.1", 4))
	report("fixedwindow", ask(ours, "192.0.2.1", 4))
	// Output:
	// throttled
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 60 (seconds)
	// fixedwindow
	//   status:      200 200 200 429
	//   remaining:   2 1 0 0
	//   admitted:    X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   refused:     Cache-Control Content-Length Retry-After X-Ratelimit-Limit X-Ratelimit-Remaining X-Ratelimit-Reset
	//   Retry-After: 150 (seconds)
}
