package limiter_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

func ExampleLimiter_Allow() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(3)), limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	for range 4 {
		d, err := l.Allow(context.Background(), "client-42", 1)
		if err != nil {
			panic(err)
		}
		fmt.Printf("allowed=%v remaining=%d retry=%v reset=%s\n",
			d.Allowed, d.Remaining, d.RetryAfter, d.ResetAt.UTC().Format("15:04:05"))
	}
	// Output:
	// allowed=true remaining=2 retry=0s reset=12:01:00
	// allowed=true remaining=1 retry=0s reset=12:01:00
	// allowed=true remaining=0 retry=0s reset=12:01:00
	// allowed=false remaining=0 retry=30s reset=12:01:00
}

// A layered policy bounds the boundary burst: 100 per minute, but never
// more than 5 in any one second.
func ExampleNewPolicy_layered() {
	p, err := limiter.NewPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	if err != nil {
		panic(err)
	}
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 59, 0, time.UTC))
	l, _ := limiter.New(p, limiter.WithClock(clk))
	defer l.Close()
	admitted := 0
	for range 20 {
		if d, _ := l.Allow(context.Background(), "k", 1); d.Allowed {
			admitted++
		}
	}
	d, _ := l.Allow(context.Background(), "k", 1)
	fmt.Println(p, "| admitted:", admitted, "| refused by the", d.Window, "window")
	// Output: api: 100/1m0s + 5/1s | admitted: 5 | refused by the 1s window
}

func ExampleNewPolicy_invalid() {
	_, err := limiter.NewPolicy("api", limiter.Rate{Limit: 10, Window: 1500 * time.Microsecond})
	fmt.Println(err)
	// Output: limiter: invalid policy: policy "api" rate #1 (10/1.5ms): window 1.5ms is not a whole number of milliseconds
}

func ExampleDecide() {
	p := limiter.MustPolicy("ticks", limiter.Rate{Limit: 3, Window: 10 * time.Millisecond})
	var state [limiter.MaxWindows]limiter.State
	for _, tick := range []int64{0, 1, 2, 3, 9, 10} {
		next, d := limiter.Decide(p, state, time.UnixMilli(tick), 1)
		if d.Allowed {
			state = next
		}
		fmt.Printf("tick %2d: allowed=%v\n", tick, d.Allowed)
	}
	// Output:
	// tick  0: allowed=true
	// tick  1: allowed=true
	// tick  2: allowed=true
	// tick  3: allowed=false
	// tick  9: allowed=false
	// tick 10: allowed=true
}

// A plan of 100 requests a day at the customer's midnight, and 600 a
// minute. The 29th of March 2026 springs forward in Paris: that day lasts
// 23 hours, and the day's budget starts again at midnight, Paris time.
func ExamplePerDayIn() {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		panic(err) // no tz database: import _ "time/tzdata" in main
	}
	p, err := limiter.NewPolicy("plan", limiter.PerDayIn(100, paris), limiter.PerMinute(600))
	if err != nil {
		panic(err)
	}
	clk := limitertest.New(time.Date(2026, 3, 29, 12, 0, 0, 0, paris))
	l, err := limiter.New(p, limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	d, err := l.Allow(context.Background(), "customer-42", 1)
	if err != nil {
		panic(err)
	}
	fmt.Println(p.ID())
	fmt.Println(d.Allowed, d.Remaining, d.Window, d.ResetAt.In(paris))
	// Output:
	// plan:day@Europe/Paris:60000
	// true 99 23h0m0s 2026-03-30 00:00:00 +0200 CEST
}

// A cost known only once the work is done: admit at an estimate (the
// reservation), then settle at the actual cost, once. The difference is
// charged (past the limit if need be: the key is then in debt until its
// window ends) or returned.
func ExampleLimiter_Settle() {
	clk := limitertest.New(time.Date(2026, 12, 3, 12, 0, 30, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("tokens", limiter.PerMinute(1_000)).MustUnit("acme-tokens"), limiter.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	d, err := l.Allow(ctx, "acme", 100) // reserve 100
	if err != nil || !d.Allowed {
		log.Fatal(d, err)
	}
	if err := l.Settle(ctx, "acme", 100, 1_200, d); err != nil { // the work used 1,200
		log.Fatal(err)
	}
	next, err := l.Allow(ctx, "acme", 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("in debt:", !next.Allowed, "retry after", next.RetryAfter)
	// Output:
	// in debt: true retry after 30s
}
