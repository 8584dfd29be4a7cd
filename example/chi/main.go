// Command chi is the README's recipe: a chi router with a limit per client
// address on a group of routes, a login route that counts failed attempts
// only, an API-key limit that falls back to the client's address, and a
// handler that shows the caller its quota.
//
//	go run ./example/chi
//	curl -s localhost:8082/api/quota -H 'X-API-Key: k-1'
//	for i in $(seq 6); do curl -s -o /dev/null -w '%{http_code}\n' -d password=no localhost:8082/login; done
package main

import (
	"encoding/json"
	"log"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func main() {
	log.Fatal(http.ListenAndServe("127.0.0.1:8082", newRouter()))
}

// newRouter builds the routes; every limiter gets opts (a test's clock).
// Each policy has a name of its own, so that the limiters could share one
// store (Redis) and keep their counters apart.
func newRouter(opts ...limiter.Option) chi.Router {
	limit := func(p *limiter.Policy, mopts ...middleware.Option) func(http.Handler) http.Handler {
		return middleware.MustNew(limiter.MustNew(p, opts...), mopts...)
	}
	perAddr := limit(limiter.MustPolicy("pages", limiter.PerMinute(10)))
	// Failed logins only: a 401 counts, a success is refunded.
	login := limit(limiter.MustPolicy("login", limiter.PerMinute(3)),
		middleware.WithCountIf(func(status int) bool { return status == http.StatusUnauthorized }))
	// By API key when the request has one, by address otherwise.
	apiKey := keyfunc.Must(keyfunc.First(
		keyfunc.Must(keyfunc.Header("X-API-Key")), keyfunc.Must(keyfunc.RemoteHost())))
	api := limit(limiter.MustPolicy("api", limiter.PerMinute(100)), middleware.WithKey(apiKey))
	// One budget per client for the route, whichever {id} it asks for.
	perRoute := limit(limiter.MustPolicy("users", limiter.PerMinute(5)),
		middleware.WithKey(keyfunc.Must(keyfunc.Join(keyfunc.RoutePattern(), keyfunc.Must(keyfunc.RemoteHost())))))

	r := chi.NewRouter()
	r.Get("/healthz", text("ok")) // never limited
	r.Group(func(r chi.Router) {
		r.Use(perAddr) // the group's routes share one budget per address
		r.Get("/items", text("items"))
		r.Get("/items/{id}", text("an item"))
	})
	r.With(login).Post("/login", func(w http.ResponseWriter, r *http.Request) {
		if r.PostFormValue("password") != "open sesame" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
			return
		}
		text("welcome")(w, r)
	})
	r.With(api).Get("/api/quota", func(w http.ResponseWriter, r *http.Request) {
		d, _ := middleware.DecisionFrom(r.Context())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]int64{
			"limit": d.Limit, "remaining": d.Remaining, "reset": d.ResetAt.Unix(),
		})
	})
	r.With(perRoute).Get("/users/{id}", text("a user"))
	return r
}

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(s + "\n")) }
}
