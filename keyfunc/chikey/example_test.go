package chikey_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/keyfunc/chikey"
)

// With chi, let chi's ClientIPFromXFF resolve the client and key by what
// it found; keyfunc.RoutePattern reads the pattern of the route chi
// matched.
func ExampleClientIP() {
	key := keyfunc.Must(keyfunc.Join(keyfunc.Must(chikey.ClientIP()), keyfunc.RoutePattern()))
	r := chi.NewRouter()
	r.Use(middleware.ClientIPFromXFF("10.0.0.0/8"))
	r.Get("/users/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(key(r))
	})
	req := httptest.NewRequest(http.MethodGet, "/users/7", nil)
	req.RemoteAddr = "10.0.0.2:40000"
	req.Header.Set("X-Forwarded-For", "2001:db8:1:2::99, 10.1.1.1")
	r.ServeHTTP(httptest.NewRecorder(), req)
	// Output:
	// join:21:ip6:2001:db8:1:2::/64,17:route:/users/{id}, <nil>
}
