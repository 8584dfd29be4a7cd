package grpclimit_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/fixedwindow/ratelimit/headers"
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
// (keyfunc.Header and Metadata), with and without their options.
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
		{"by_hashed_api_key", must(t)(keyfunc.Header("X-API-Key", keyfunc.WithHashedValues())),
			grpclimit.Must(grpclimit.Metadata("x-api-key", keyfunc.WithHashedValues())), []string{"x-api-key", "k-1"}},
		{"by_long_api_key", must(t)(keyfunc.Header("X-API-Key", keyfunc.WithMaxKeyLen(80))),
			grpclimit.Must(grpclimit.Metadata("x-api-key", keyfunc.WithMaxKeyLen(80))), []string{"x-api-key", strings.Repeat("k", 90)}},
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

// TestOneTextForBothDoors (issue 32): a refusal names its limit alike
// through both doors, in one package's words (internal/refusal): the HTTP problem
// body's detail and the gRPC QuotaFailure's description say "per 1m" of
// a fixed window and "per day", "per week", "per month" of calendar
// windows, never a Go duration ("743h0m0s").
func TestOneTextForBothDoors(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := headers.New(headers.WithProblemJSON("", ""))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		p    *limiter.Policy
		at   time.Time
		want string
	}{
		{"fixed_window", limiter.MustPolicy("api", limiter.PerMinute(2)), noon30, "2 per 1m"},
		{"fixed_window_of_90s", limiter.MustPolicy("api", limiter.Rate{Limit: 2, Window: 90 * time.Second}), noon30, "2 per 90s"},
		{"day", limiter.MustPolicy("plan", limiter.PerDayIn(2, paris), limiter.PerMinute(100)), noon30, "2 per day"},
		{"week", limiter.MustPolicy("plan", limiter.PerWeekIn(2, time.UTC)), noon30, "2 per week"},
		{"month", limiter.MustPolicy("plan", limiter.PerMonthIn(2, time.UTC)), time.Date(2026, 7, 15, 12, 17, 0, 0, time.UTC), "2 per month"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, tt.p, tt.at)
			mw, err := middleware.New(l, middleware.WithHeaders(hw))
			if err != nil {
				t.Fatal(err)
			}
			web := httptest.NewServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
			t.Cleanup(web.Close)
			client := serve(t, interceptors(newInterceptor(t, l))...)
			// One budget: a request and a call spend it, then both doors
			// refuse.
			if resp, err := web.Client().Get(web.URL); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("first request: %v, %v", resp, err)
			} else {
				resp.Body.Close()
			}
			if a := check(t, client); a.code != codes.OK {
				t.Fatalf("first call: %v", a.st)
			}
			resp, err := web.Client().Get(web.URL)
			if err != nil {
				t.Fatal(err)
			}
			var body struct{ Detail string }
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusTooManyRequests {
				t.Fatalf("HTTP refusal: %d, %v; want 429 with a problem body", resp.StatusCode, err)
			}
			a := check(t, client)
			if a.code != codes.ResourceExhausted {
				t.Fatalf("gRPC refusal: %v, want RESOURCE_EXHAUSTED", a.st)
			}
			_, qf := details(t, a.st)
			texts := map[string]string{"HTTP detail": body.Detail, "QuotaFailure": qf.GetViolations()[0].GetDescription(), "status message": a.st.Message()}
			for door, text := range texts {
				if got := limitIn(text); got != tt.want {
					t.Errorf("%s %q names the limit %q, want %q", door, text, got, tt.want)
				}
				if text != body.Detail {
					t.Errorf("%s %q, want the HTTP detail's words, %q", door, text, body.Detail)
				}
			}
		})
	}
}

// limitIn returns what a refusal's text says its limit is: the words
// between "limit of " and " exceeded".
func limitIn(text string) string {
	_, after, _ := strings.Cut(text, "limit of ")
	limit, _, _ := strings.Cut(after, " exceeded")
	return limit
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
