package headers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/testfixture"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestSharedHeaderScenarios writes the last decision of each scenario of
// the top-level testdata/headers, which the middleware's tests serve too,
// and compares the status and headers with the file's.
func TestSharedHeaderScenarios(t *testing.T) {
	testfixture.EachHeaderScenario(t, func(t *testing.T, file string, sc *testfixture.HeaderScenario) {
		l := sc.Limiter(t)
		var (
			d   limiter.Decision
			err error
		)
		for range sc.Requests {
			if d, err = l.Allow(context.Background(), "client", 1); err != nil {
				t.Fatal(err)
			}
		}
		var opts []Option // the limiter's decisions carry their own instant
		if sc.Draft {
			opts = append(opts, WithDraftHeaders())
		}
		w, err := New(opts...)
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if d.Allowed {
			w.Write(rec.Header(), &d)
		} else {
			w.WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
		}
		for _, diff := range sc.Check(rec.Code, rec.Header()) {
			t.Errorf("%s: %s", file, diff)
		}
	})
}
