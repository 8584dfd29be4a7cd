package middleware_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/fixedwindow/ratelimit/middleware"
)

// send sends one request from the address through h and prints the status
// and the limit headers. The one-line forms read the wall clock, so the
// examples use an hour's window, which the few requests cannot straddle
// except at the turn of an hour, and print no Retry-After, which depends on
// the time.
func send(h http.Handler, remoteAddr string, decorate ...func(*http.Request) *http.Request) {
	r := httptest.NewRequest(http.MethodGet, "/hello", nil)
	r.RemoteAddr = remoteAddr
	for _, d := range decorate {
		r = d(r)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	fmt.Printf("%d limit=%s remaining=%s\n", w.Code,
		w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"))
}

// Two requests an hour per client address, in one line.
func ExampleByIP() {
	mux := http.NewServeMux()
	mux.Handle("GET /hello", middleware.ByIP(2, time.Hour)(hello))

	send(mux, "192.0.2.1:50001")
	send(mux, "192.0.2.1:50002") // another port, the same client
	send(mux, "192.0.2.1:50003") // refused until the hour ends
	send(mux, "192.0.2.2:50001") // another client
	// Output:
	// 200 limit=2 remaining=1
	// 200 limit=2 remaining=0
	// 429 limit=2 remaining=0
	// 200 limit=2 remaining=1
}

// Two requests an hour per API key, in one line; a request without the key
// has no budget of its own and is answered 400.
func ExampleByHeader() {
	h := middleware.ByHeader("X-API-Key", 2, time.Hour)(hello)
	apiKey := func(k string) func(*http.Request) *http.Request {
		return func(r *http.Request) *http.Request {
			r.Header.Set("X-API-Key", k)
			return r
		}
	}

	send(h, "192.0.2.1:1", apiKey("k-1"))
	send(h, "192.0.2.2:1", apiKey("k-1")) // the same key from elsewhere
	send(h, "192.0.2.1:1", apiKey("k-1"))
	send(h, "192.0.2.1:1", apiKey("k-2"))
	send(h, "192.0.2.1:1") // no key
	// Output:
	// 200 limit=2 remaining=1
	// 200 limit=2 remaining=0
	// 429 limit=2 remaining=0
	// 200 limit=2 remaining=1
	// 400 limit= remaining=
}

type userKey struct{}

// userID is what an authentication middleware would provide: the id of the
// signed-in user, stored in the request's context.
func userID(r *http.Request) (string, bool) {
	id, ok := r.Context().Value(userKey{}).(string)
	return id, ok
}

// By user when signed in, else by address, in one line.
func ExampleByPrincipal() {
	h := middleware.ByPrincipal(userID, 2, time.Hour)(hello)
	as := func(id string) func(*http.Request) *http.Request {
		return func(r *http.Request) *http.Request {
			return r.WithContext(context.WithValue(r.Context(), userKey{}, id))
		}
	}

	send(h, "192.0.2.1:1", as("ann"))
	send(h, "192.0.2.2:1", as("ann")) // ann from another address: one budget
	send(h, "192.0.2.1:1", as("ann"))
	send(h, "192.0.2.1:1")                  // anonymous, by address: a budget of its own
	send(h, "192.0.2.1:1", as("192.0.2.1")) // a user id is never an address
	// Output:
	// 200 limit=2 remaining=1
	// 200 limit=2 remaining=0
	// 429 limit=2 remaining=0
	// 200 limit=2 remaining=1
	// 200 limit=2 remaining=1
}
