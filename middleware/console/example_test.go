package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// A console over one limiter, behind an authorizer that trusts a header
// a proxy would set, with an audit trail printed; then a script's look
// at a refused customer, and its reset.
func ExampleNew() {
	clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))
	api := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(3)), limiter.WithClock(clk))
	defer api.Close()
	roles := map[string]console.Access{"ada": console.Change, "bob": console.Look}
	h, err := console.New(console.Config{
		Authorize: func(r *http.Request) (string, console.Access) {
			who := r.Header.Get("X-Admin") // set by the service's admin auth
			return who, roles[who]         // console.Look, console.Change; anyone else: refused
		},
		Observe: func(e console.Event) {
			fmt.Printf("audit: %s %s %q by %s (%s)\n", e.At.Format(time.TimeOnly), e.Action, e.Key, e.Who, e.Reason)
		},
		Limiters: []*limiter.Limiter{api},
	})
	if err != nil {
		panic(err)
	}
	for range 4 {
		api.Allow(context.Background(), "acme", 1)
	}

	r := httptest.NewRequest(http.MethodGet, "/admin/limits/usage?key=acme", nil)
	r.Header.Set("X-Admin", "ada")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	var u struct {
		Token    string `json:"csrf_token"`
		Limiters []struct {
			Windows []struct {
				Used, Remaining int64
				ResetIn         string `json:"reset_in"`
			}
		}
	}
	json.NewDecoder(w.Body).Decode(&u)
	fmt.Printf("%+v\n", u.Limiters[0].Windows[0])

	r = httptest.NewRequest(http.MethodPost, "/admin/limits/reset", strings.NewReader(`{"key":"acme","reason":"ticket 42"}`))
	r.Header.Set("X-Admin", "ada")
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("X-CSRF-Token", u.Token)
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	d, _ := api.Allow(context.Background(), "acme", 1)
	fmt.Println(w.Code, "admitted:", d.Allowed)

	r = httptest.NewRequest(http.MethodGet, "/admin/limits/usage?key=acme", nil) // no X-Admin
	w = httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Print(w.Code, " ", w.Body.String())
	// Output:
	// audit: 12:00:30 lookup "acme" by ada ()
	// {Used:3 Remaining:0 ResetIn:30s}
	// audit: 12:00:30 reset "acme" by ada (ticket 42)
	// audit: 12:00:30 lookup "acme" by ada ()
	// 200 admitted: true
	// audit: 12:00:30 forbidden "" by  ()
	// 403 forbidden
}
