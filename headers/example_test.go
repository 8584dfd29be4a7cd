package headers_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

func ExampleWriter_Write() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	lim, err := limiter.New(limiter.MustPolicy("default", limiter.PerMinute(100)), limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer lim.Close()
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		panic(err)
	}
	d, err := lim.Allow(context.Background(), "203.0.113.7", 1)
	if err != nil {
		panic(err)
	}
	h := http.Header{}
	hw.Write(h, &d)
	for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "RateLimit-Policy", "RateLimit", "Retry-After"} {
		fmt.Printf("%s: %q\n", name, h.Get(name))
	}
	// Output:
	// X-RateLimit-Limit: "100"
	// X-RateLimit-Remaining: "99"
	// X-RateLimit-Reset: "1785499260"
	// RateLimit-Policy: "\"default\";q=100;w=60"
	// RateLimit: "\"default\";r=99;t=30"
	// Retry-After: ""
}

func ExampleWriter_WriteDenied() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 500_000_000, time.UTC))
	lim, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer lim.Close()
	hw, err := headers.New(headers.WithProblemJSON("", ""))
	if err != nil {
		panic(err)
	}
	var d limiter.Decision
	for range 3 {
		if d, err = lim.Allow(context.Background(), "user:42", 1); err != nil {
			panic(err)
		}
	}
	rec := httptest.NewRecorder()
	hw.WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
	fmt.Println(rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Content-Type"))
	fmt.Print(rec.Body.String())
	// Output:
	// 429 30 application/problem+json
	// {"type":"about:blank","title":"Too Many Requests","status":429,"detail":"rate limit of 2 per 1m exceeded; retry in 30 seconds","retry_after":30,"violated-policies":["api"]}
}

// A Decision made some other way than by a limiter (here by hand, as a
// custom middleware.Limiter would) carries no instant of its own:
// limiter.Dated dates it, so that the draft t counts seconds until the
// reset. The middleware dates such decisions by the limiter's clock.
func ExampleWriter_Write_customDecision() {
	now := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	d := limiter.Decision{
		Allowed: true, Limit: 10, Remaining: 7, Window: time.Minute,
		ResetAt: now.Add(30 * time.Second),
		Policy:  limiter.MustPolicy("custom", limiter.PerMinute(10)),
	}
	hw, err := headers.New(headers.WithDraftHeaders(), headers.WithoutLegacyHeaders())
	if err != nil {
		panic(err)
	}
	d = limiter.Dated(d, now)
	h := http.Header{}
	hw.Write(h, &d)
	fmt.Println(h.Get("RateLimit"))
	// Output:
	// "custom";r=7;t=30
}
