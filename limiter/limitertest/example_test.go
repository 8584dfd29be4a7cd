package limitertest_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// The limiter's clock is the only one to set: the middleware reads it for
// every request, so moving it crosses the window without a sleep.
func Example() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer l.Close()
	mw, err := middleware.New(l)
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "hello")
	}))
	get := func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		fmt.Println(rec.Code, rec.Header().Get("X-RateLimit-Remaining"))
	}

	get()
	get()
	get() // the third in the minute is refused until 12:01
	clk.Advance(time.Minute)
	get()
	// Output:
	// 200 1
	// 200 0
	// 429 0
	// 200 1
}
