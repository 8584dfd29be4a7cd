package middleware_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A login route that counts failed attempts only: three a minute per
// address, successes free. The headers are written before the handler
// runs, so they count every attempt as spent: a success answers
// "remaining 2" and leaves 3, and a success with a single attempt left
// answers "remaining 0" and leaves 1 (see WithCountIf).
func ExampleWithCountIf() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("login", limiter.PerMinute(3)), limiter.WithClock(clk))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	failed := func(status int) bool { return status == http.StatusUnauthorized || status == http.StatusForbidden }
	mw, err := middleware.New(l, middleware.WithCountIf(failed))
	if err != nil {
		log.Fatal(err)
	}
	login := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Password") != "secret" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "welcome")
	}))
	try := func(password string) {
		r := httptest.NewRequest(http.MethodPost, "/login", nil)
		r.RemoteAddr = "192.0.2.1:1"
		r.Header.Set("X-Password", password)
		w := httptest.NewRecorder()
		login.ServeHTTP(w, r)
		fmt.Println(w.Code, "remaining", w.Header().Get("X-RateLimit-Remaining"))
	}
	for range 5 {
		try("secret") // refunded: a success does not count
	}
	try("guess-1")
	try("guess-2")
	try("guess-3")
	try("secret") // three failures spent: refused, even with the password
	clk.Advance(30 * time.Second)
	try("secret") // a new minute
	// Output:
	// 200 remaining 2
	// 200 remaining 2
	// 200 remaining 2
	// 200 remaining 2
	// 200 remaining 2
	// 401 remaining 2
	// 401 remaining 1
	// 401 remaining 0
	// 429 remaining 0
	// 200 remaining 2
}

// The handler reads the decision the headers describe, here to show the
// quota in its body.
func ExampleDecisionFrom() {
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	mw, err := middleware.New(l)
	if err != nil {
		log.Fatal(err)
	}
	quota := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, ok := middleware.DecisionFrom(r.Context())
		if !ok {
			http.Error(w, "no rate-limit decision", http.StatusInternalServerError)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"limit": d.Limit, "remaining": d.Remaining, "reset": d.ResetAt.Unix()})
	}))
	r := httptest.NewRequest(http.MethodGet, "/quota", nil)
	r.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	quota.ServeHTTP(w, r)
	fmt.Print(w.Body.String())
	// Output:
	// {"limit":100,"remaining":99,"reset":1785499260}
}
