package migrating

import (
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// perClient is how services use golang.org/x/time/rate per client: a
// rate.Limiter per address, made on first sight, and a 429 when it
// refuses. now is the service's clock: time.Now in production, a fake
// clock here, so that the comparison runs on one timeline.
type perClient struct {
	mu       sync.Mutex
	limiters map[string]*rate.Limiter
	r        rate.Limit
	b        int
	now      func() time.Time
}

func (p *perClient) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, _, _ := net.SplitHostPort(r.RemoteAddr)
		p.mu.Lock()
		l, ok := p.limiters[ip]
		if !ok {
			l = rate.NewLimiter(p.r, p.b)
			p.limiters[ip] = l
		}
		p.mu.Unlock()
		if !l.AllowN(p.now(), 1) {
			http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Example_tokenBucket: rate.NewLimiter(100, 10) per client (100 a second,
// bursts of 10) becomes a window of 10 requests per 100 ms: the same
// burst, the same sustained rate. What it does not keep: the bucket
// spaces requests out (one every 10 ms once the burst is spent), a window
// admits its 10 at once, and a client may spend one window's 10 just
// before a boundary and the next window's just after: 20 in a moment.
func Example_tokenBucket() {
	oldClock, newClock := limitertest.New(noon30), limitertest.New(noon30)
	old := (&perClient{limiters: map[string]*rate.Limiter{}, r: 100, b: 10, now: oldClock.Now}).middleware(ok)

	l := limiter.MustNew(limiter.MustPolicy("api", limiter.Rate{Limit: 10, Window: 100 * time.Millisecond}),
		limiter.WithClock(newClock))
	defer l.Close()
	ours := middleware.MustNew(l)(ok)

	count := func(as []answer) (n int) {
		for _, a := range as {
			if a.code == http.StatusOK {
				n++
			}
		}
		return n
	}
	fmt.Println("burst, 15 requests at once:",
		count(ask(old, "192.0.2.1", 15)), count(ask(ours, "192.0.2.1", 15)))
	fmt.Println("sustained, one request a millisecond for 10 s:",
		admitted(old, oldClock, "192.0.2.2", time.Millisecond, 10*time.Second),
		admitted(ours, newClock, "192.0.2.2", time.Millisecond, 10*time.Second))

	// 15 requests 99 ms into a window, 15 more 1 ms later.
	oldClock.Set(noon30.Add(time.Minute + 99*time.Millisecond))
	newClock.Set(noon30.Add(time.Minute + 99*time.Millisecond))
	before := []int{count(ask(old, "192.0.2.3", 15)), count(ask(ours, "192.0.2.3", 15))}
	oldClock.Advance(time.Millisecond)
	newClock.Advance(time.Millisecond)
	fmt.Println("around a boundary, 15 then 15 a millisecond later:",
		before[0], "+", count(ask(old, "192.0.2.3", 15)), "then",
		before[1], "+", count(ask(ours, "192.0.2.3", 15)))
	fmt.Println("a refusal:", ask(old, "192.0.2.3", 1)[0].code, ask(ours, "192.0.2.3", 1)[0].code)
	// Output:
	// burst, 15 requests at once: 10 10
	// sustained, one request a millisecond for 10 s: 1009 1000
	// around a boundary, 15 then 15 a millisecond later: 10 + 0 then 10 + 10
	// a refusal: 429 429
}

// Example_tokenBucketLayered: when burst ÷ rate is not a convenient
// window (rate.NewLimiter(3, 10): 3 a second, bursts of 10), a layered
// policy keeps both: 10 a second for the burst, 30 per 10 s for the
// sustained rate. Over a minute the bucket admits its first burst on top
// of the rate (10 + 3 × 60), the windows the rate alone (6 × 30).
func Example_tokenBucketLayered() {
	oldClock, newClock := limitertest.New(noon30), limitertest.New(noon30)
	old := (&perClient{limiters: map[string]*rate.Limiter{}, r: 3, b: 10, now: oldClock.Now}).middleware(ok)

	l := limiter.MustNew(limiter.MustPolicy("api",
		limiter.Rate{Limit: 10, Window: time.Second},
		limiter.Rate{Limit: 30, Window: 10 * time.Second}),
		limiter.WithClock(newClock))
	defer l.Close()
	ours := middleware.MustNew(l)(ok)

	fmt.Println("in the first second, one request each 10 ms:",
		admitted(old, oldClock, "192.0.2.1", 10*time.Millisecond, time.Second),
		admitted(ours, newClock, "192.0.2.1", 10*time.Millisecond, time.Second))
	oldClock.Set(noon30.Add(time.Minute)) // a minute of whole 10 s windows
	newClock.Set(noon30.Add(time.Minute))
	fmt.Println("over a minute, one request each 10 ms:",
		admitted(old, oldClock, "192.0.2.2", 10*time.Millisecond, time.Minute),
		admitted(ours, newClock, "192.0.2.2", 10*time.Millisecond, time.Minute))
	// Output:
	// in the first second, one request each 10 ms: 12 10
	// over a minute, one request each 10 ms: 189 180
}
