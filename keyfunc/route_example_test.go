package keyfunc_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-chi/chi/v5"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

// The limiter's key function in chi's root r.Use, before routing: the
// key is still the full pattern of the route chi will serve.
func ExampleEndpoint() {
	key := keyfunc.Endpoint()
	r := chi.NewRouter()
	r.Use(func(next http.Handler) http.Handler { // where the limiter goes
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fmt.Println(key(req))
			next.ServeHTTP(w, req)
		})
	})
	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/users/{id}", func(http.ResponseWriter, *http.Request) {})
		r.Get("/orders/{id}", func(http.ResponseWriter, *http.Request) {})
	})
	for _, path := range []string{"/api/v1/users/1", "/api/v1/users/2", "/api/v1/orders/7", "/nowhere"} {
		r.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil))
	}
	// Output:
	// route:GET /api/v1/users/{id} <nil>
	// route:GET /api/v1/users/{id} <nil>
	// route:GET /api/v1/orders/{id} <nil>
	// route:(unmatched) <nil>
}

// Around a ServeMux, ServeMuxPattern asks the mux which pattern will
// serve the request.
func ExampleServeMuxPattern() {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(http.ResponseWriter, *http.Request) {})
	key := keyfunc.Must(keyfunc.ServeMuxPattern(mux))
	for _, path := range []string{"/users/1", "/users/2", "/nowhere"} {
		fmt.Println(key(httptest.NewRequest(http.MethodGet, path, nil)))
	}
	// Output:
	// route:GET /users/{id} <nil>
	// route:GET /users/{id} <nil>
	// route:(unmatched) <nil>
}
