package keyfunc_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/fixedwindow/ratelimit/keyfunc"
)

func ExampleRemoteHost() {
	key, err := keyfunc.RemoteHost()
	if err != nil {
		panic(err)
	}
	for _, addr := range []string{
		"203.0.113.7:52139",
		"203.0.113.7:52140", // a new connection: new port, same key
		"[::ffff:203.0.113.7]:443",
		"[2001:db8:1:2::a]:443",
		"[2001:db8:1:2::b]:443", // same /64, same key
		"203.0.113.7",           // bare, as chi's RealIP leaves it: same key
		"localhost:80",          // no IP: no key
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = addr
		k, err := key(r)
		fmt.Printf("%-26s %q %v\n", addr, k, errors.Is(err, keyfunc.ErrNoKey))
	}
	// Output:
	// 203.0.113.7:52139          "203.0.113.7" false
	// 203.0.113.7:52140          "203.0.113.7" false
	// [::ffff:203.0.113.7]:443   "203.0.113.7" false
	// [2001:db8:1:2::a]:443      "ip6:2001:db8:1:2::/64" false
	// [2001:db8:1:2::b]:443      "ip6:2001:db8:1:2::/64" false
	// 203.0.113.7                "203.0.113.7" false
	// localhost:80               "" true
}

func ExampleTrustedProxy() {
	key, err := keyfunc.TrustedProxy(keyfunc.XForwardedFor, []string{"10.0.0.0/8"})
	if err != nil {
		panic(err)
	}
	// Through the load balancer at 10.0.0.2: the client's forged entry on
	// the left is skipped, the address the balancer appended is used.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "10.0.0.2:40000"
	r.Header.Set("X-Forwarded-For", "1.1.1.1, 198.51.100.9")
	fmt.Println(key(r))

	// Straight from the internet: the header is ignored.
	r.RemoteAddr = "203.0.113.7:5555"
	fmt.Println(key(r))
	// Output:
	// 198.51.100.9 <nil>
	// 203.0.113.7 <nil>
}

func ExampleHeader() {
	key, err := keyfunc.Header("X-API-Key")
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("X-API-Key", "k-123")
	fmt.Println(key(r))

	r.Header.Del("X-API-Key")
	_, err = key(r)
	fmt.Println(err)
	// Output:
	// hdr:X-Api-Key:k-123 <nil>
	// keyfunc: no key: no X-Api-Key header
}

func ExampleJoin() {
	key := keyfunc.Must(keyfunc.Join(keyfunc.Must(keyfunc.RemoteHost()), keyfunc.RoutePattern()))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /users/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Println(key(r))
	})
	for _, path := range []string{"/users/1", "/users/2"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.RemoteAddr = "203.0.113.7:1234"
		mux.ServeHTTP(httptest.NewRecorder(), r)
	}
	// Output:
	// join:11:203.0.113.7,21:route:GET /users/{id}, <nil>
	// join:11:203.0.113.7,21:route:GET /users/{id}, <nil>
}

func ExamplePrincipal() {
	type userKey struct{}
	key, err := keyfunc.Principal(func(r *http.Request) (string, bool) {
		id, ok := r.Context().Value(userKey{}).(string)
		return id, ok
	})
	if err != nil {
		panic(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	_, err = key(r) // anonymous: no key, not a shared bucket
	fmt.Println(errors.Is(err, keyfunc.ErrNoKey))

	r = r.WithContext(context.WithValue(r.Context(), userKey{}, "42"))
	fmt.Println(key(r))
	// Output:
	// true
	// user:42 <nil>
}

// By user when signed in, else by address: the first alternative that
// resolves keys the request, and the kinds' prefixes keep a user id from
// ever matching an address.
func ExampleFirst() {
	type userKey struct{}
	byUser, err := keyfunc.Principal(func(r *http.Request) (string, bool) {
		id, ok := r.Context().Value(userKey{}).(string)
		return id, ok
	})
	if err != nil {
		panic(err)
	}
	key := keyfunc.Must(keyfunc.First(byUser, keyfunc.Must(keyfunc.RemoteHost())))

	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "203.0.113.7:52139"
	fmt.Println(key(r)) // anonymous

	for _, id := range []string{"42", "203.0.113.7"} {
		fmt.Println(key(r.WithContext(context.WithValue(r.Context(), userKey{}, id))))
	}
	// Output:
	// 203.0.113.7 <nil>
	// user:42 <nil>
	// user:203.0.113.7 <nil>
}

// Key functions fixed in code take one expression each with Must, which
// panics, at start-up, where the constructor would have returned an error.
func ExampleMust() {
	key := keyfunc.Must(keyfunc.First(
		keyfunc.Must(keyfunc.Header("X-API-Key")), // by API key when the request has one,
		keyfunc.Must(keyfunc.RemoteHost()),        // by address otherwise
	))
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = "203.0.113.7:52139"
	fmt.Println(key(r))
	r.Header.Set("X-API-Key", "k-123")
	fmt.Println(key(r))

	defer func() { fmt.Println("panic:", recover()) }()
	keyfunc.Must(keyfunc.Header("X API Key")) // not a header name
	// Output:
	// 203.0.113.7 <nil>
	// hdr:X-Api-Key:k-123 <nil>
	// panic: keyfunc: invalid option: Header: header name "X API Key" is not a valid field name
}
