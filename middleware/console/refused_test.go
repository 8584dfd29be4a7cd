package console_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// at0312 is 2026-07-31 03:12:10 UTC.
var at0312 = time.Date(2026, 7, 31, 3, 12, 10, 0, time.UTC)

// refusedJSON is the part of the usage JSON that says why a key was
// refused.
type refusedJSON struct {
	Refused *struct {
		Count int64 `json:"count"`
		Over  int64 `json:"over"`
		Runs  []struct {
			Policy, Window, From, To, First, Last string
			Limit, Count                          int64
		} `json:"runs"`
		Error string `json:"error"`
	} `json:"refused"`
}

// limitedJSON is the JSON of ./limited.
type limitedJSON struct {
	At   string `json:"at"`
	Keys []struct {
		Key      string   `json:"key"`
		Hashed   bool     `json:"hashed"`
		Count    int64    `json:"count"`
		Over     int64    `json:"over"`
		First    string   `json:"first"`
		Last     string   `json:"last"`
		Policies []string `json:"policies"`
	} `json:"keys"`
	Error string `json:"error"`
}

// newRefusals returns a Refusals as cfg says, closed when the test ends.
func newRefusals(t *testing.T, cfg console.RefusalsConfig) *console.Refusals {
	t.Helper()
	rec, err := console.NewRefusals(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	return rec
}

// door returns the fixture's limiter as HTTP middleware around a 200,
// its observer the recorder's, keyed by the client's address.
func (f *fixture) door(t *testing.T, rec *console.Refusals) http.Handler {
	t.Helper()
	mw, err := middleware.New(f.api, middleware.WithObserver(rec.Observe))
	if err != nil {
		t.Fatal(err)
	}
	return mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
}

// call sends n requests from host through door, at the fixture's clock
// moved by step after each, and returns how many were refused.
func (f *fixture) call(door http.Handler, host string, n int, step time.Duration) (refused int) {
	for range n {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.RemoteAddr = host + ":5000"
		w := httptest.NewRecorder()
		door.ServeHTTP(w, r)
		if w.Code == http.StatusTooManyRequests {
			refused++
		}
		f.clk.Advance(step)
	}
	return refused
}

// TestWhyRefusedAfterRollover: a key refused at 03:12 under api's
// minute, looked up at 03:20 when that window is long gone (its count
// is 0 again), shows the refused window, the policy and the count, on
// the JSON and on the page, to a person who may only look; an hour past
// the last refusal it is gone.
func TestWhyRefusedAfterRollover(t *testing.T) {
	rec := newRefusals(t, console.RefusalsConfig{})
	fx := newFixture(t, nil, func(c *console.Config) { c.Refusals = rec })
	fx.clk.Set(at0312)
	door := fx.door(t, rec)
	if got := fx.call(door, "203.0.113.42", 8, 5*time.Second); got != 3 { // 03:12:10 to 03:12:45
		t.Fatalf("refused %d of 8 at 5 a minute, want 3", got)
	}
	fx.clk.Set(time.Date(2026, 7, 31, 3, 20, 0, 0, time.UTC))
	if used := fx.used(t, "203.0.113.42"); used != 0 {
		t.Fatalf("used %d at 03:20, want 0: the window has rolled over", used)
	}
	var u refusedJSON
	decode(t, fx.get("/admin/limits/usage?key=203.0.113.42", "X-Test-Role", "viewer"), &u)
	if u.Refused == nil || u.Refused.Count != 3 || len(u.Refused.Runs) != 1 {
		t.Fatalf("refused %+v, want 3 refusals in one run", u.Refused)
	}
	run := u.Refused.Runs[0]
	if run.Policy != "api" || run.Window != "1m0s" || run.Limit != 5 || run.Count != 3 ||
		run.From != "2026-07-31T03:12:00Z" || run.To != "2026-07-31T03:13:00Z" ||
		run.First != "2026-07-31T03:12:35Z" || run.Last != "2026-07-31T03:12:45Z" {
		t.Fatalf("run %+v, want api 1m0s (limit 5) from 03:12:00 to 03:13:00, first 03:12:35, last 03:12:45, 3 refusals", run)
	}
	w := fx.get("/admin/limits/?key=203.0.113.42", "X-Test-Role", "viewer")
	body := w.Body.String()
	for _, want := range []string{`id="refused"`, `<span id="refused-count">3</span> refusals`, "<td><code>api</code></td>",
		"<td><code>1m0s</code></td>", "<time>2026-07-31T03:12:00Z</time> to <time>2026-07-31T03:13:00Z</time>",
		"<td><time>2026-07-31T03:12:35Z</time></td>", `<td class="n">3</td>`} {
		if w.Code != http.StatusOK || !strings.Contains(body, want) {
			t.Fatalf("page: %d, lacks %q:\n%s", w.Code, want, body)
		}
	}
	fx.clk.Set(time.Date(2026, 7, 31, 4, 12, 46, 0, time.UTC))
	u = refusedJSON{}
	decode(t, fx.get("/admin/limits/usage?key=203.0.113.42"), &u)
	if u.Refused == nil || len(u.Refused.Runs) != 0 {
		t.Fatalf("an hour after the last refusal: %+v, want no run", u.Refused)
	}
}

// TestLimitedNowPage: the page without a key lists the keys limited now
// to a viewer, each linked to its lookup, and the JSON says the same;
// a key last refused more than a minute ago is not limited now.
func TestLimitedNowPage(t *testing.T) {
	rec := newRefusals(t, console.RefusalsConfig{})
	fx := newFixture(t, nil, func(c *console.Config) { c.Refusals = rec })
	fx.clk.Set(at0312)
	door := fx.door(t, rec)
	fx.call(door, "198.51.100.7", 7, 0) // 2 refused at 03:12:10
	fx.clk.Advance(2 * time.Minute)     // 03:14:10
	fx.call(door, "203.0.113.42", 9, 0) // 4 refused
	fx.call(door, "203.0.113.43", 6, 0) // 1 refused
	var l limitedJSON
	decode(t, fx.get("/admin/limits/limited", "X-Test-Role", "viewer"), &l)
	if len(l.Keys) != 2 || l.Keys[0].Key != "203.0.113.42" || l.Keys[0].Count != 4 || l.Keys[1].Key != "203.0.113.43" ||
		l.Keys[0].First != "2026-07-31T03:14:10Z" || len(l.Keys[0].Policies) != 1 || l.Keys[0].Policies[0] != "api" || l.Keys[0].Hashed {
		t.Fatalf("limited now %+v, want 203.0.113.42 (4, api, since 03:14:10) then 203.0.113.43", l)
	}
	w := fx.get("/admin/limits/", "X-Test-Role", "viewer")
	body := w.Body.String()
	for _, want := range []string{`id="limited"`, `<a href="./?key=203.0.113.42"><code>203.0.113.42</code></a>`, `<td class="n">4</td>`} {
		if !strings.Contains(body, want) {
			t.Fatalf("page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "198.51.100.7") {
		t.Fatalf("a key refused 2 minutes ago is limited now:\n%s", body)
	}
	var acts []string
	for _, e := range fx.takeEvents() {
		acts = append(acts, e.Action)
	}
	if strings.Join(acts, ",") != "limited,limited" {
		t.Fatalf("events %v, want limited twice (the JSON, the page)", acts)
	}
}

// TestNoRefusalsNoViews: without Config.Refusals the usage JSON has no
// "refused" and ./limited is not found.
func TestNoRefusalsNoViews(t *testing.T) {
	fx := newFixture(t, nil, nil)
	var u refusedJSON
	decode(t, fx.get("/admin/limits/usage?key=k"), &u)
	if u.Refused != nil {
		t.Fatalf("refused %+v without Config.Refusals", u.Refused)
	}
	if w := fx.get("/admin/limits/limited"); w.Code != http.StatusNotFound {
		t.Fatalf("limited without Config.Refusals: %d, want 404", w.Code)
	}
}

func TestNewRefusalsRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  console.RefusalsConfig
	}{
		{"negative_keys", console.RefusalsConfig{Keys: -1}},
		{"hash_without_redis", console.RefusalsConfig{KeyHash: []byte("0123456789abcdef")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := console.NewRefusals(tc.cfg); err == nil || !strings.HasPrefix(err.Error(), "console: ") {
				t.Fatalf("got %v, want a console: error", err)
			}
		})
	}
}
