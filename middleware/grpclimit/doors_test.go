package grpclimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestOneBudgetForBothDoors: one limiter serves an HTTP route
// (middleware.New) and the gRPC health service (New), each keyed its own
// way but alike, and a client's HTTP requests and gRPC calls, taken in
// turn, spend one budget: L in all, then both doors refuse. Keyed by
// address (the defaults: keyfunc.RemoteHost and PeerHost) and by API key
// (keyfunc.Header and Metadata).
func TestOneBudgetForBothDoors(t *testing.T) {
	const limit = 4
	for _, tt := range []struct {
		name    string
		httpKey keyfunc.Func
		grpcKey grpclimit.KeyFunc
		hdr     []string // the client's API key, as a header and as metadata
	}{
		{"by_address", must(t)(keyfunc.RemoteHost()), grpclimit.PeerHost(), nil},
		{"by_api_key", must(t)(keyfunc.Header("X-API-Key")), grpclimit.Must(grpclimit.Metadata("x-api-key")), []string{"x-api-key", "k-1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, limiter.MustPolicy("shared", limiter.PerMinute(limit)), noon30)
			mw, err := middleware.New(l, middleware.WithKey(tt.httpKey))
			if err != nil {
				t.Fatal(err)
			}
			web := httptest.NewServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			t.Cleanup(web.Close)
			client := serve(t, interceptors(newInterceptor(t, l, grpclimit.WithKey(tt.grpcKey)))...)
			get := func() int {
				req, err := http.NewRequest(http.MethodGet, web.URL, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tt.hdr != nil {
					req.Header.Set(tt.hdr[0], tt.hdr[1])
				}
				resp, err := web.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			for i := range limit {
				if i%2 == 0 {
					if code := get(); code != http.StatusOK {
						t.Fatalf("request %d over HTTP: %d, want 200", i+1, code)
					}
				} else if a := check(t, client, tt.hdr...); a.code != codes.OK {
					t.Fatalf("request %d over gRPC: %v, want OK", i+1, a.st)
				}
			}
			if code := get(); code != http.StatusTooManyRequests {
				t.Fatalf("HTTP after %d in all: %d, want 429", limit, code)
			}
			if a := check(t, client, tt.hdr...); a.code != codes.ResourceExhausted {
				t.Fatalf("gRPC after %d in all: %v, want RESOURCE_EXHAUSTED", limit, a.st)
			}
		})
	}
}

// must returns a function that fails t when a keyfunc constructor fails.
func must(t testing.TB) func(keyfunc.Func, error) keyfunc.Func {
	return func(f keyfunc.Func, err error) keyfunc.Func {
		t.Helper()
		if err != nil {
			t.Fatalf("constructor: %v", err)
		}
		return f
	}
}
