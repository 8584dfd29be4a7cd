package middleware_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// hello is the handler being protected. The examples' limiters read a
// limitertest.Clock stopped at 12:00:30 UTC, so that their output is
// stable; a server leaves the default system clock.
var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "hello")
})

// show sends one request from the address and prints the answer.
func show(h http.Handler, remoteAddr string, header ...string) {
	r := httptest.NewRequest(http.MethodGet, "/hello", nil)
	r.RemoteAddr = remoteAddr
	if len(header) == 2 {
		r.Header.Set(header[0], header[1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Printf("%d limit=%s remaining=%s retry-after=%q\n", w.Code,
		w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("Retry-After"))
}

// Two requests a minute per client address: the third is refused until
// the minute ends, 30 seconds later.
func ExampleNew() {
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(2)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	mw, err := middleware.New(l) // keyed by keyfunc.RemoteHost
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /hello", mw(hello))

	show(mux, "192.0.2.1:50001")
	show(mux, "192.0.2.1:50002") // another port, the same client
	show(mux, "192.0.2.1:50003")
	show(mux, "192.0.2.2:50001") // another client
	// Output:
	// 200 limit=2 remaining=1 retry-after=""
	// 200 limit=2 remaining=0 retry-after=""
	// 429 limit=2 remaining=0 retry-after="30"
	// 200 limit=2 remaining=1 retry-after=""
}

// A limit per address and a tighter one per user, on one route: one set of
// headers, from whichever limit is closer to refusing.
func ExampleWithLimiter() {
	perIP, err := limiter.New(limiter.MustPolicy("per-ip", limiter.PerMinute(4)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer perIP.Close()
	perUser, err := limiter.New(limiter.MustPolicy("per-user", limiter.PerMinute(2)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer perUser.Close()
	user, err := keyfunc.Header("X-User")
	if err != nil {
		log.Fatal(err)
	}
	mw, err := middleware.New(perIP, middleware.WithLimiter(perUser, user))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(hello)

	show(h, "192.0.2.1:1", "X-User", "ann") // ann 1 of 2, address 1 of 4
	show(h, "192.0.2.1:1", "X-User", "ann") // ann 2 of 2
	show(h, "192.0.2.1:1", "X-User", "ann") // ann refused; the address limit, asked first, charged 3 of 4
	show(h, "192.0.2.1:1", "X-User", "bob") // address 4 of 4 is now the tighter
	show(h, "192.0.2.1:1")                  // no user: 400, nothing charged
	// Output:
	// 200 limit=2 remaining=1 retry-after=""
	// 200 limit=2 remaining=0 retry-after=""
	// 429 limit=2 remaining=0 retry-after="30"
	// 200 limit=4 remaining=0 retry-after=""
	// 400 limit= remaining= retry-after=""
}

// Shadow mode counts and reports what the limit would do, and refuses
// nothing.
func ExampleWithShadow() {
	l, err := limiter.New(limiter.MustPolicy("new-limit", limiter.PerMinute(1)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	wouldRefuse := 0
	mw, err := middleware.New(l, middleware.WithShadow(), middleware.WithObserver(func(e middleware.Event) {
		if e.Outcome == middleware.ShadowDenied {
			wouldRefuse++
		}
	}))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(hello)
	show(h, "192.0.2.1:1")
	show(h, "192.0.2.1:1")
	fmt.Println("would have refused:", wouldRefuse)
	// Output:
	// 200 limit=1 remaining=0 retry-after=""
	// 200 limit=1 remaining=0 retry-after=""
	// would have refused: 1
}

// Plan tiers: the lookup picks the plan from the authenticated user;
// here a header stands in for the authentication.
func ExampleWithPlans() {
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	free := &limiter.Plan{Name: "free"} // the policy's own 100 a minute
	paid := &limiter.Plan{Name: "paid", Limits: map[string][]int64{"api": {10_000}}}
	user, err := keyfunc.Header("X-User")
	if err != nil {
		log.Fatal(err)
	}
	plan := func(r *http.Request) (*limiter.Plan, string, error) {
		if r.Header.Get("X-User") == "paying-customer" {
			return paid, "", nil
		}
		return free, "", nil
	}
	mw, err := middleware.New(l, middleware.WithKey(user), middleware.WithPlans(plan))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(hello)
	show(h, "192.0.2.1:1", "X-User", "someone")
	show(h, "192.0.2.1:1", "X-User", "paying-customer")
	// Output:
	// 200 limit=100 remaining=99 retry-after=""
	// 200 limit=10000 remaining=9999 retry-after=""
}

// Health checks are exempt: never counted, never refused.
func ExampleWithExempt() {
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(1)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	health := func(r *http.Request, _ string) bool { return r.URL.Path == "/healthz" }
	mw, err := middleware.New(l, middleware.WithExempt(health))
	if err != nil {
		log.Fatal(err)
	}
	h := mw(hello)
	for range 3 {
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		fmt.Println(w.Code)
	}
	// Output:
	// 200
	// 200
	// 200
}
