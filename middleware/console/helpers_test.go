package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// t0 is 2026-07-31 12:00:10 UTC: 14:00:10 in Paris, whose day ends at
// 22:00 UTC.
var t0 = time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC)

// admin is whom the test authorizer names, unless the request's
// X-Test-Who header names another; "Authorization: nobody" is refused,
// and "X-Test-Role: viewer" may only look; anyone else may change.
const admin = "ada@support"

// A fixture is a console over one limiter ("api": 5 a minute and 100 a
// day in Paris) and one cap ("exports": 2 at once), on a fake clock,
// with the events its observer heard.
type fixture struct {
	h      http.Handler
	api    *limiter.Limiter
	export *limiter.InFlight
	clk    *limitertest.Clock
	mu     sync.Mutex
	events []console.Event
}

// newFixture builds a fixture on the memory store (or on store, if not
// nil); edit may change the Config before New.
func newFixture(t *testing.T, store limiter.Store, edit func(*console.Config)) *fixture {
	t.Helper()
	f := &fixture{clk: limitertest.New(t0)}
	paris := storetest.Zone(t, "Europe/Paris")
	opts := []limiter.Option{limiter.WithClock(f.clk)}
	if store != nil {
		opts = append(opts, limiter.WithStore(store))
	}
	f.api = limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(5), limiter.PerDayIn(100, paris)), opts...)
	t.Cleanup(func() { f.api.Close() })
	f.export = limiter.MustInFlight("exports", 2, opts...)
	t.Cleanup(func() { f.export.Close() })
	cfg := console.Config{
		Authorize: func(r *http.Request) (string, console.Access) {
			who := r.Header.Get("X-Test-Who")
			if who == "" {
				who = admin
			}
			switch {
			case r.Header.Get("Authorization") == "nobody":
				return who, 0
			case r.Header.Get("X-Test-Role") == "viewer":
				return who, console.Look
			}
			return who, console.Change
		},
		Observe:  f.observe,
		Limiters: []*limiter.Limiter{f.api},
		Caps:     []*limiter.InFlight{f.export},
	}
	if edit != nil {
		edit(&cfg)
	}
	h, err := console.New(cfg)
	if err != nil {
		t.Fatalf("console.New: %v", err)
	}
	f.h = h
	return f
}

func (f *fixture) observe(e console.Event) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, e)
}

// takeEvents returns the events heard since the last call.
func (f *fixture) takeEvents() []console.Event {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.events
	f.events = nil
	return e
}

// spend admits n requests of key, failing the test if one is refused.
func (f *fixture) spend(t *testing.T, key string, n int) {
	t.Helper()
	for i := range n {
		if d, err := f.api.Allow(context.Background(), key, 1); err != nil || !d.Allowed {
			t.Fatalf("request %d of %q: %+v, %v", i+1, key, d, err)
		}
	}
}

// used returns what key used of api's minute window.
func (f *fixture) used(t *testing.T, key string) int64 {
	t.Helper()
	u, err := f.api.Usage(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return u.Windows[0].Used
}

// get serves GET target, with the headers given as name, value pairs.
func (f *fixture) get(target string, hdr ...string) *httptest.ResponseRecorder {
	return f.serve(httptest.NewRequest(http.MethodGet, target, nil), hdr)
}

// postForm serves a POST of form to target from the console's own page
// (Sec-Fetch-Site: same-origin), with more headers given as pairs.
func (f *fixture) postForm(target string, form url.Values, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return f.serve(r, hdr)
}

// postJSON serves a POST of body as JSON to target, as a script sends it
// (no Origin, no Sec-Fetch-Site), with the token.
func (f *fixture) postJSON(target, body, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, target, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return f.serve(r, []string{"X-CSRF-Token", token})
}

func (f *fixture) serve(r *http.Request, hdr []string) *httptest.ResponseRecorder {
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

// token returns the CSRF token the JSON usage gives the admin.
func (f *fixture) token(t *testing.T) string {
	t.Helper()
	var rep struct {
		Token string `json:"csrf_token"`
	}
	decode(t, f.get("/admin/limits/usage?key=any"), &rep)
	f.takeEvents()
	if rep.Token == "" {
		t.Fatal("usage JSON has no csrf_token")
	}
	return rep.Token
}

// decode reads w's body as JSON into v.
func decode(t *testing.T, w *httptest.ResponseRecorder, v any) {
	t.Helper()
	b, _ := io.ReadAll(w.Body)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("status %d, body %q: %v", w.Code, b, err)
	}
}

// httptestRecorder is httptest.ResponseRecorder, named short for tables.
type httptestRecorder = httptest.ResponseRecorder

// newRequest is a request from the console's own page.
func newRequest(method, target string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	r.Header.Set("Sec-Fetch-Site", "same-origin")
	return r
}
