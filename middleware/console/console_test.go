package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// usageJSON is the JSON usage, as a script reads it.
type usageJSON struct {
	Key      string `json:"key"`
	At       string `json:"at"`
	Failed   bool   `json:"failed"`
	Done     string `json:"done"`
	Limiters []struct {
		Policy  string `json:"policy"`
		Error   string `json:"error"`
		Windows []struct {
			Window                       string `json:"window"`
			Limit, Used, Remaining, Debt int64
			Reset                        string `json:"reset"`
			ResetIn                      string `json:"reset_in"`
			ResetLocal                   string `json:"reset_local"`
			Zone                         string `json:"zone"`
		} `json:"windows"`
	} `json:"limiters"`
	Caps []struct {
		Policy                 string `json:"policy"`
		Limit, Held, Remaining int64
		Error                  string `json:"error"`
	} `json:"caps"`
}

func TestNewRefusesBadConfig(t *testing.T) {
	l := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(5)))
	defer l.Close()
	twin := limiter.MustNew(limiter.MustPolicy("api", limiter.PerHour(5)))
	defer twin.Close()
	f := limiter.MustInFlight("exports", 2)
	defer f.Close()
	authorize := func(*http.Request) (string, console.Access) { return "x", console.Change }
	observe := func(console.Event) {}
	for _, tc := range []struct {
		name string
		cfg  console.Config
		want string
	}{
		{"no_authorizer", console.Config{Observe: observe, Limiters: []*limiter.Limiter{l}}, "Authorize is nil"},
		{"no_observer", console.Config{Authorize: authorize, Limiters: []*limiter.Limiter{l}}, "Observe is nil"},
		{"nothing_to_show", console.Config{Authorize: authorize, Observe: observe}, "no Limiters and no Caps"},
		{"nil_limiter", console.Config{Authorize: authorize, Observe: observe, Limiters: []*limiter.Limiter{l, nil}}, "Limiters[1] is nil"},
		{"nil_cap", console.Config{Authorize: authorize, Observe: observe, Caps: []*limiter.InFlight{nil}}, "Caps[0] is nil"},
		{"two_limiters_one_name", console.Config{Authorize: authorize, Observe: observe, Limiters: []*limiter.Limiter{l, twin}}, `two limiters or two caps named "api"`},
		{"two_caps_one_name", console.Config{Authorize: authorize, Observe: observe, Caps: []*limiter.InFlight{f, f}}, `named "exports"`},
		{"short_secret", console.Config{Authorize: authorize, Observe: observe, Limiters: []*limiter.Limiter{l}, CSRFSecret: make([]byte, 31)}, "CSRFSecret is 31 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := console.New(tc.cfg)
			if err == nil || h != nil || !strings.HasPrefix(err.Error(), "console: ") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, %v; want an error saying %q", h, err, tc.want)
			}
		})
	}
	if _, err := console.New(console.Config{Authorize: authorize, Observe: observe, Caps: []*limiter.InFlight{f}}); err != nil {
		t.Fatalf("a console of caps alone: %v", err)
	}
}

// TestLookupJSON: the JSON usage shows every window with its debt and
// its reset in its own zone, and the slots held; the observer hears who
// looked up which key.
func TestLookupJSON(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 3)
	_, release, err := fx.export.Acquire(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	w := fx.get("/admin/limits/usage?key=acme")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, type %q", w.Code, w.Header().Get("Content-Type"))
	}
	var u usageJSON
	decode(t, w, &u)
	if u.Key != "acme" || u.At != "2026-07-31T12:00:10Z" || u.Failed || len(u.Limiters) != 1 || len(u.Caps) != 1 {
		t.Fatalf("usage %+v", u)
	}
	ws := u.Limiters[0].Windows
	if len(ws) != 2 {
		t.Fatalf("windows %+v, want the minute and the day", ws)
	}
	minute, day := ws[0], ws[1]
	if minute.Window != "1m0s" || minute.Limit != 5 || minute.Used != 3 || minute.Remaining != 2 || minute.Debt != 0 ||
		minute.Reset != "2026-07-31T12:01:00Z" || minute.ResetIn != "50s" || minute.ResetLocal != "2026-07-31 12:01:00 UTC" || minute.Zone != "UTC" {
		t.Errorf("minute %+v", minute)
	}
	if day.Window != "day@Europe/Paris" || day.Used != 3 || day.Remaining != 97 ||
		day.ResetLocal != "2026-08-01 00:00:00 CEST" || day.Zone != "Europe/Paris" || day.ResetIn != "9h 59m" {
		t.Errorf("day %+v", day)
	}
	if c := u.Caps[0]; c.Policy != "exports" || c.Limit != 2 || c.Held != 1 || c.Remaining != 1 {
		t.Errorf("cap %+v", c)
	}
	ev := fx.takeEvents()
	if len(ev) != 1 || ev[0].Action != "lookup" || ev[0].Who != admin || ev[0].Key != "acme" || ev[0].Err != nil || !ev[0].At.Equal(t0) {
		t.Fatalf("events %+v, want one lookup of acme by %s at %v", ev, admin, t0)
	}
	if fx.used(t, "acme") != 3 {
		t.Fatal("looking up charged the key")
	}
}

// TestDebtUnderAPlan: Plan reads a key under its own plan, and a key that
// used more than its plan allows shows the excess as debt.
func TestDebtUnderAPlan(t *testing.T) {
	goldPlan := &limiter.Plan{Name: "gold", Limits: map[string][]int64{"api": {10, 1000}}}
	fx := newFixture(t, nil, func(c *console.Config) {
		c.Plan = func(_ context.Context, key string) (*limiter.Plan, string, error) {
			if key == "gold" {
				return goldPlan, "", nil
			}
			return &limiter.Plan{Name: "default"}, "", nil
		}
	})
	gold, err := fx.api.For(goldPlan, "")
	if err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if _, err := gold.Allow(context.Background(), "acme", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := gold.Allow(context.Background(), "gold", 1); err != nil {
			t.Fatal(err)
		}
	}
	for key, want := range map[string][3]int64{"acme": {5, 0, 3}, "gold": {10, 2, 0}} {
		var u usageJSON
		decode(t, fx.get("/admin/limits/usage?key="+key), &u)
		m := u.Limiters[0].Windows[0]
		if got := [3]int64{m.Limit, m.Remaining, m.Debt}; m.Used != 8 || got != want {
			t.Errorf("%s: limit, remaining, debt %v (used %d), want %v (used 8)", key, got, m.Used, want)
		}
	}
}

// TestBadKeyLooksNothingUp: an empty, oversized or non-UTF-8 key is a
// 400 that says why, on every route, and no limiter is asked.
func TestBadKeyLooksNothingUp(t *testing.T) {
	asked := 0
	fx := newFixture(t, nil, func(c *console.Config) {
		c.Plan = func(context.Context, string) (*limiter.Plan, string, error) {
			asked++
			return &limiter.Plan{Name: "default"}, "", nil
		}
	})
	token := fx.token(t)
	asked = 0
	for _, key := range []struct {
		name, key, want string
	}{
		{"empty", "", "key is empty"},
		{"oversized", strings.Repeat("k", 4097), "key is 4097 bytes, more than 4096"},
		{"not_utf8", "caf\xe9", "key is not valid UTF-8"},
	} {
		q := url.QueryEscape(key.key)
		form := url.Values{"key": {key.key}, "reason": {"why"}, "csrf_token": {token}, "policy": {"api"}, "amount": {"1"}}
		for _, route := range []struct {
			name string
			do   func() *httptestRecorder
		}{
			{"page", func() *httptestRecorder { return fx.get("/admin/limits/?key=" + q) }},
			{"usage", func() *httptestRecorder { return fx.get("/admin/limits/usage?key=" + q) }},
			{"events", func() *httptestRecorder { return fx.get("/admin/limits/events?key=" + q) }},
			{"reset", func() *httptestRecorder { return fx.postForm("/admin/limits/reset", form) }},
			{"refund", func() *httptestRecorder { return fx.postForm("/admin/limits/refund", form) }},
		} {
			t.Run(key.name+"/"+route.name, func(t *testing.T) {
				w := route.do()
				if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), key.want) {
					t.Fatalf("status %d, body %.300q; want 400 saying %q", w.Code, w.Body.String(), key.want)
				}
				if asked != 0 {
					t.Fatalf("a limiter was asked %d times", asked)
				}
				ev := fx.takeEvents()
				if len(ev) != 1 || ev[0].Key != "" || ev[0].Err == nil || ev[0].Who != admin {
					t.Fatalf("events %+v, want one refused, naming no key", ev)
				}
			})
		}
	}
	if w := fx.get("/admin/limits/usage?key=" + strings.Repeat("k", 4096)); w.Code != http.StatusOK {
		t.Fatalf("a key of 4096 bytes: status %d, want 200", w.Code)
	}
}

// TestForbiddenSaysNothing: a request the authorizer refuses gets 403
// and a body that says nothing of the key, on every route, and changes
// nothing; the observer hears of it.
func TestForbiddenSaysNothing(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 5)
	token := fx.token(t)
	form := url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}, "policy": {"api"}, "amount": {"1"}}
	for _, tc := range []struct {
		name string
		w    *httptestRecorder
	}{
		{"page", fx.get("/admin/limits/?key=acme", "Authorization", "nobody")},
		{"usage", fx.get("/admin/limits/usage?key=acme", "Authorization", "nobody")},
		{"events", fx.get("/admin/limits/events?key=acme", "Authorization", "nobody")},
		{"asset", fx.get("/admin/limits/console.js", "Authorization", "nobody")},
		{"unknown", fx.get("/admin/limits/nothing", "Authorization", "nobody")},
		{"reset", fx.postForm("/admin/limits/reset", form, "Authorization", "nobody")},
		{"refund", fx.postForm("/admin/limits/refund", form, "Authorization", "nobody")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.w.Code != http.StatusForbidden || tc.w.Body.String() != "forbidden\n" {
				t.Fatalf("status %d, body %q; want 403 forbidden", tc.w.Code, tc.w.Body.String())
			}
		})
	}
	if fx.used(t, "acme") != 5 {
		t.Fatal("a forbidden request changed the key")
	}
	ev := fx.takeEvents()
	if len(ev) != 7 {
		t.Fatalf("%d events, want 7", len(ev))
	}
	for _, e := range ev {
		if e.Action != "forbidden" || e.Who != "" || e.Key != "" || e.Request == nil {
			t.Fatalf("event %+v, want forbidden, no who, no key", e)
		}
	}
}

// TestMethods: reads are GET, changes POST.
func TestMethods(t *testing.T) {
	fx := newFixture(t, nil, nil)
	for _, tc := range []struct {
		name, method, target, allow string
	}{
		{"get_reset", http.MethodGet, "/admin/limits/reset?key=acme", "POST"},
		{"get_refund", http.MethodGet, "/admin/limits/refund?key=acme", "POST"},
		{"post_page", http.MethodPost, "/admin/limits/?key=acme", "GET, HEAD"},
		{"delete_usage", http.MethodDelete, "/admin/limits/usage?key=acme", "GET, HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fx.serve(newRequest(tc.method, tc.target), nil)
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != tc.allow {
				t.Fatalf("status %d, Allow %q; want 405, %q", w.Code, w.Header().Get("Allow"), tc.allow)
			}
			// A change asked with the wrong method (an <img> forgery) is
			// audited with the key it aimed at.
			ev := fx.takeEvents()
			if change := tc.allow == "POST"; change && (len(ev) != 1 || ev[0].Action != tc.name[len("get_"):] || ev[0].Key != "acme" || ev[0].Err == nil) {
				t.Fatalf("events %+v, want one refused change of acme", ev)
			}
		})
	}
	if w := fx.get("/admin/limits/nothing"); w.Code != http.StatusNotFound {
		t.Fatalf("unknown route: %d, want 404", w.Code)
	}
	if w := fx.serve(newRequest(http.MethodHead, "/admin/limits/?key=acme"), nil); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Fatalf("HEAD: %d, %d bytes", w.Code, w.Body.Len())
	}
}

// TestEveryAnswerIsLockedDown: the page and the JSON carry the content
// security policy and the headers that keep them out of frames, caches
// and referrers.
func TestEveryAnswerIsLockedDown(t *testing.T) {
	fx := newFixture(t, nil, nil)
	for _, target := range []string{"/admin/limits/", "/admin/limits/?key=acme", "/admin/limits/usage?key=acme", "/admin/limits/usage?key=", "/admin/limits/console.js"} {
		w := fx.get(target)
		for name, want := range map[string]string{
			"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY", "Cache-Control": "no-store", "Referrer-Policy": "no-referrer",
		} {
			if got := w.Header().Get(name); got != want {
				t.Errorf("%s: %s %q, want %q", target, name, got, want)
			}
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s: CSP %q", target, csp)
		}
	}
}
