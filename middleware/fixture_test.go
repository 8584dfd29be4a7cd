package middleware_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/testfixture"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestSharedHeaderScenarios serves the requests of each scenario of the
// top-level testdata/headers through the middleware, and compares the last
// response's status and rate-limit headers with the file's, which the
// headers package's tests check against its Writer too: what a client
// sees is what the Writer writes.
func TestSharedHeaderScenarios(t *testing.T) {
	testfixture.EachHeaderScenario(t, func(t *testing.T, file string, sc *testfixture.HeaderScenario) {
		l := sc.Limiter(t)
		var hopts []headers.Option // the limiter's clock dates its decisions
		if sc.Draft {
			hopts = append(hopts, headers.WithDraftHeaders())
		}
		hw, err := headers.New(hopts...)
		if err != nil {
			t.Fatal(err)
		}
		key := func(*http.Request) (string, error) { return "client", nil }
		mw, err := middleware.New(l, middleware.WithKey(key), middleware.WithHeaders(hw))
		if err != nil {
			t.Fatal(err)
		}
		h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		var rec *httptest.ResponseRecorder
		for range sc.Requests {
			rec = httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		}
		for _, diff := range sc.Check(rec.Code, rec.Header()) {
			t.Errorf("%s: %s", file, diff)
		}
	})
}
