package browsertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
	_ "time/tzdata" // the Paris window, on a system without the tz database

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// Bounds on a browser test: each tab's whole run, and each wait for the
// page to show something.
const (
	tabTimeout  = 60 * time.Second
	waitTimeout = 10 * time.Second
)

// t0 is 2026-07-31 12:00:20 UTC, on every site's fake clock: the page
// shows the same instants on every run (the screenshot too).
var t0 = time.Date(2026, 7, 31, 12, 0, 20, 0, time.UTC)

// startBrowser starts headless Chromium with a fresh profile for t and
// returns the context of its first tab; the browser stops when t ends.
// Without a browser the test fails under CI (CI=true) and skips
// elsewhere, saying how to get one.
func startBrowser(t *testing.T) context.Context {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		const how = "no Chromium on PATH (chromium, chromium-browser, google-chrome): install Debian's with scripts/ensure-chromium.sh"
		if os.Getenv("CI") == "true" {
			t.Fatal(how)
		}
		t.Skip(how)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1200, 720),
	)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Do(bctx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", path, err)
	}
	return bctx
}

// newTab opens a tab of browser, closed when t ends, bounded by
// tabTimeout.
func newTab(t *testing.T, browser context.Context) context.Context {
	t.Helper()
	ctx, cancel := chromedp.NewContext(browser)
	ctx, cancelTimeout := context.WithTimeout(ctx, tabTimeout)
	t.Cleanup(func() {
		cancelTimeout()
		cancel()
	})
	return ctx
}

// A site is a service with the console mounted at /admin/limits/ on a
// loopback test server: one limiter ("api": 5 a minute and 1,000 a day
// in Paris) and one cap ("exports": 3 at once) on a fake clock, open to
// loopback clients, with the audit trail kept.
type site struct {
	url    string // the console's page, ending in /admin/limits/
	clk    *limitertest.Clock
	api    *limiter.Limiter
	export *limiter.InFlight
	door   http.Handler // api as HTTP middleware around a 200, keyed by client address; with withRefusals only
	mu     sync.Mutex
	events []console.Event
}

// newSite starts a site on the memory store, or on store if not nil,
// whose loopback user may change.
func newSite(t *testing.T, store limiter.Store) *site {
	t.Helper()
	return newSiteFor(t, store, console.Change)
}

// A siteOption changes a site before its console is built.
type siteOption func(t *testing.T, s *site, c *console.Config)

// withRefusals gives the console a Refusals (Config.Refusals) and the
// site a door, the api limiter as middleware whose observer feeds it.
func withRefusals(t *testing.T, s *site, c *console.Config) {
	t.Helper()
	rec, err := console.NewRefusals(console.RefusalsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rec.Close() })
	mw, err := middleware.New(s.api, middleware.WithObserver(rec.Observe))
	if err != nil {
		t.Fatal(err)
	}
	s.door = mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	c.Refusals = rec
}

// newSiteFor starts a site whose loopback user may do what may says,
// changed by each of with.
func newSiteFor(t *testing.T, store limiter.Store, may console.Access, with ...siteOption) *site {
	t.Helper()
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	s := &site{clk: limitertest.New(t0)}
	opts := []limiter.Option{limiter.WithClock(s.clk)}
	if store != nil {
		opts = append(opts, limiter.WithStore(store))
	}
	s.api = limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(5), limiter.PerDayIn(1000, paris)), opts...)
	t.Cleanup(func() { s.api.Close() })
	s.export = limiter.MustInFlight("exports", 3, opts...)
	t.Cleanup(func() { s.export.Close() })
	cfg := console.Config{
		Authorize: func(r *http.Request) (string, console.Access) {
			host, _, err := net.SplitHostPort(r.RemoteAddr)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return "", 0
			}
			return "support@browsertest", may
		},
		Observe: func(e console.Event) {
			s.mu.Lock()
			s.events = append(s.events, e)
			s.mu.Unlock()
		},
		Limiters: []*limiter.Limiter{s.api},
		Caps:     []*limiter.InFlight{s.export},
	}
	for _, o := range with {
		o(t, s, &cfg)
	}
	h, err := console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/limits/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.url = srv.URL + "/admin/limits/"
	return s
}

// spend admits n requests of key, failing t if one is refused.
func (s *site) spend(t *testing.T, key string, n int) {
	t.Helper()
	for i := range n {
		if d, err := s.api.Allow(context.Background(), key, 1); err != nil || !d.Allowed {
			t.Fatalf("request %d of %q: %+v, %v", i+1, key, d, err)
		}
	}
}

// admitted reports whether the next request of key is admitted (and
// charges it if so).
func (s *site) admitted(t *testing.T, key string) bool {
	t.Helper()
	d, err := s.api.Allow(context.Background(), key, 1)
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}

// call sends n requests from host through the site's door, the clock
// moved by step after each, and returns how many were refused (429).
func (s *site) call(t *testing.T, host string, n int, step time.Duration) (refused int) {
	t.Helper()
	if s.door == nil {
		t.Fatal("the site has no door: build it withRefusals")
	}
	for range n {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		r.RemoteAddr = host + ":5000"
		w := httptest.NewRecorder()
		s.door.ServeHTTP(w, r)
		if w.Code == http.StatusTooManyRequests {
			refused++
		}
		s.clk.Advance(step)
	}
	return refused
}

// lastEvent returns the last event the observer heard.
func (s *site) lastEvent() console.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.events) == 0 {
		return console.Event{}
	}
	return s.events[len(s.events)-1]
}

// token returns the CSRF token the console gives its loopback user, read
// from the JSON as a script reads it.
func (s *site) token(t *testing.T) string {
	t.Helper()
	res, err := http.Get(s.url + "usage?key=any")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var u struct {
		Token string `json:"csrf_token"`
	}
	if err := json.NewDecoder(res.Body).Decode(&u); err != nil || u.Token == "" {
		t.Fatalf("usage JSON: %v, token %q", err, u.Token)
	}
	return u.Token
}

// js quotes s as a JavaScript string.
func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// waitText waits until the element sel selects has the text want.
func waitText(t *testing.T, tab context.Context, sel, want string) {
	t.Helper()
	expr := fmt.Sprintf(`(document.querySelector(%s) || {}).textContent === %s`, js(sel), js(want))
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		got, _ := chromedp.Run(tab, chromedp.Evaluate[string](fmt.Sprintf(`String((document.querySelector(%s) || {}).textContent)`, js(sel))))
		t.Fatalf("%s: text %q, want %q: %v", sel, got, want, err)
	}
}

// rows returns the text the browser renders (innerText) of each cell of
// each table row sel selects.
func rows(t *testing.T, tab context.Context, sel string) [][]string {
	t.Helper()
	got, err := chromedp.Run(tab, chromedp.Evaluate[[][]string](fmt.Sprintf(
		`Array.from(document.querySelectorAll(%s), tr => Array.from(tr.cells, td => td.innerText))`, js(sel))))
	if err != nil {
		t.Fatalf("rows %s: %v", sel, err)
	}
	return got
}

// cell is the selector of a value the page shows, by its JSON path.
func cell(path string) string { return `td[data-path="` + path + `"]` }

// uniquePrefix returns a Redis key prefix no other test (or run) uses.
func uniquePrefix(t *testing.T) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "test:browser:" + t.Name() + ":" + hex.EncodeToString(b[:]) + ":"
}

// TestLookUpWatchAndReset: a person opens the console, types a key, sees
// its windows and slots, watches the minute fill while the page is open
// until the key is refused, presses Reset with a reason, and sees the
// window empty; the key is admitted again, and the audit trail names
// who reset it. On the memory store and on Redis alike.
func TestLookUpWatchAndReset(t *testing.T) {
	browser := startBrowser(t)
	for _, store := range []string{"memory", "redis"} {
		t.Run(store, func(t *testing.T) {
			var st limiter.Store
			if store == "redis" {
				rs, err := redisstore.New(redistest.Shared(t), redisstore.WithPrefix(uniquePrefix(t)), redisstore.WithTimeout(5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { rs.Close() })
				st = rs
			}
			s := newSite(t, st)
			s.spend(t, "acme", 2)
			_, release, err := s.export.Acquire(context.Background(), "acme")
			if err != nil {
				t.Fatal(err)
			}
			defer release()

			tab := newTab(t, browser)
			if err := chromedp.Do(tab,
				chromedp.Navigate(s.url),
				chromedp.WaitVisible(chromedp.CSS(`#key`)),
				chromedp.SendKeys(chromedp.CSS(`#key`), "acme"),
				chromedp.Click(chromedp.CSS(`form.lookup button`)),
				chromedp.WaitVisible(chromedp.CSS(`#usage`)),
			); err != nil {
				t.Fatal(err)
			}
			waitText(t, tab, `#key-name`, "acme")
			waitText(t, tab, cell("limiters.0.windows.0.used"), "2")
			waitText(t, tab, cell("limiters.0.windows.0.remaining"), "3")
			waitText(t, tab, cell("limiters.0.windows.1.reset_local"), "2026-08-01 00:00:00 CEST")
			waitText(t, tab, cell("caps.0.held"), "1")

			// The window fills while the page is open.
			waitText(t, tab, `#live`, "updating every second")
			s.spend(t, "acme", 3)
			waitText(t, tab, cell("limiters.0.windows.0.used"), "5")
			waitText(t, tab, cell("limiters.0.windows.0.remaining"), "0")
			if s.admitted(t, "acme") {
				t.Fatal("a sixth request of 5 a minute admitted")
			}

			// Reset asks for a tick first: without it the form is not sent.
			if err := chromedp.Do(tab,
				chromedp.SendKeys(chromedp.CSS(`#reset-reason`), "ticket 4711"),
				chromedp.Click(chromedp.CSS(`#reset`)),
			); err != nil {
				t.Fatal(err)
			}
			unsent, err := chromedp.Run(tab, chromedp.Evaluate[bool](`document.querySelector("#reset-confirm").validity.valueMissing && !document.querySelector("#notice")`))
			if err != nil || !unsent || s.admitted(t, "acme") {
				t.Fatalf("Reset without its tick: unsent %v, %v; want the form not sent and the key refused", unsent, err)
			}
			if err := chromedp.Do(tab,
				chromedp.Click(chromedp.CSS(`#reset-confirm`)),
				chromedp.Click(chromedp.CSS(`#reset`)),
				chromedp.WaitVisible(chromedp.CSS(`#notice`)),
			); err != nil {
				t.Fatal(err)
			}
			waitText(t, tab, cell("limiters.0.windows.0.used"), "0")
			waitText(t, tab, cell("limiters.0.windows.0.remaining"), "5")
			if !s.admitted(t, "acme") {
				t.Fatal("the key is refused after the reset")
			}
			waitText(t, tab, cell("limiters.0.windows.0.used"), "1") // and the page sees it
			var reset console.Event
			s.mu.Lock()
			for _, e := range s.events {
				if e.Action == "reset" {
					reset = e
				}
			}
			s.mu.Unlock()
			if reset.Who != "support@browsertest" || reset.Key != "acme" || reset.Reason != "ticket 4711" || reset.Err != nil || !reset.At.Equal(t0) {
				t.Fatalf("the audit trail's reset: %+v", reset)
			}
		})
	}
}

// TestKeysWithControlCharacters: a key with NUL or LF, opened by its
// query, is the key the live view shows and the page's Reset resets.
func TestKeysWithControlCharacters(t *testing.T) {
	browser := startBrowser(t)
	for _, key := range []string{"nul\x00key", "lf\nkey"} {
		t.Run(strconv.Quote(key), func(t *testing.T) {
			s := newSite(t, nil)
			s.spend(t, key, 5)
			tab := newTab(t, browser)
			if err := chromedp.Do(tab, chromedp.Navigate(s.url+"?key="+url.QueryEscape(key)), chromedp.WaitVisible(chromedp.CSS(`#usage`))); err != nil {
				t.Fatal(err)
			}
			waitText(t, tab, `#live`, "updating every second")
			s.spend(t, "nul\uFFFDkey", 1) // what an attribute makes of NUL: the live view must not show it
			waitText(t, tab, cell("limiters.0.windows.0.used"), "5")
			if err := chromedp.Do(tab,
				chromedp.SendKeys(chromedp.CSS(`#reset-reason`), "ticket 4712"),
				chromedp.Click(chromedp.CSS(`#reset-confirm`)),
				chromedp.Click(chromedp.CSS(`#reset`)),
				chromedp.WaitVisible(chromedp.CSS(`#notice`)),
			); err != nil {
				t.Fatal(err)
			}
			if !s.admitted(t, key) {
				t.Fatalf("%q is refused after the page's Reset", key)
			}
			s.mu.Lock()
			var reset console.Event
			for _, e := range s.events {
				if e.Action == "reset" {
					reset = e
				}
			}
			s.mu.Unlock()
			if reset.Key != key || reset.Err != nil {
				t.Fatalf("the audit trail's reset %+v, want one of %q", reset, key)
			}
		})
	}
}

// TestOpenPageKeepsAFreshToken: a page left open while its CSRF token
// expires (two hours on the site's clock) still resets: its live view
// hands the forms the current token.
func TestOpenPageKeepsAFreshToken(t *testing.T) {
	browser := startBrowser(t)
	s := newSite(t, nil)
	s.spend(t, "acme", 5)
	tab := newTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url+"?key=acme"), chromedp.WaitVisible(chromedp.CSS(`#usage`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, `#live`, "updating every second")
	first, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.querySelector("form.reset input[name=csrf_token]").value`))
	if err != nil {
		t.Fatal(err)
	}
	s.clk.Advance(2*time.Hour + time.Minute)
	s.spend(t, "acme", 5) // a new minute: the page sees 5 used once it has a new report, and its token
	waitText(t, tab, cell("limiters.0.windows.0.used"), "5")
	expr := `document.querySelector("form.reset input[name=csrf_token]").value !== ` + js(first)
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		t.Fatalf("the form's token is still the one two hours old: %v", err)
	}
	if err := chromedp.Do(tab,
		chromedp.SendKeys(chromedp.CSS(`#reset-reason`), "ticket 4713"),
		chromedp.Click(chromedp.CSS(`#reset-confirm`)),
		chromedp.Click(chromedp.CSS(`#reset`)),
		chromedp.WaitVisible(chromedp.CSS(`#notice`)),
	); err != nil {
		t.Fatal(err)
	}
	if !s.admitted(t, "acme") {
		t.Fatal("the key is refused after a reset from a page open for two hours")
	}
}

// TestViewerSeesNoForm: a person who may only look sees the key's usage
// and no form to change it; a reset posted from the page anyway is
// refused (403) and audited with its key.
func TestViewerSeesNoForm(t *testing.T) {
	browser := startBrowser(t)
	s := newSiteFor(t, nil, console.Look)
	s.spend(t, "acme", 3)
	tab := newTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url+"?key=acme"), chromedp.WaitVisible(chromedp.CSS(`#look-only`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, cell("limiters.0.windows.0.used"), "3")
	forms, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("form.reset, form.refund, input[name=csrf_token]").length`))
	if err != nil || forms != 0 {
		t.Fatalf("a viewer's page has %d change forms or tokens, %v; want none", forms, err)
	}
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](`fetch("reset", {method: "POST",
		body: new URLSearchParams({key: "acme", reason: "forged", confirm: "reset"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("a viewer's reset: status %d, %v; want 403", status, err)
	}
	if e := s.lastEvent(); e.Action != "reset" || e.Key != "acme" || e.Err == nil {
		t.Fatalf("the audit trail's last event %+v, want a refused reset of acme", e)
	}
	admitted := 0 // of 3 more: 2 with 3 of 5 used, 3 had the key been reset
	for range 3 {
		if s.admitted(t, "acme") {
			admitted++
		}
	}
	if admitted != 2 {
		t.Fatalf("%d of 3 more admitted, want 2: a viewer's reset reset the key", admitted)
	}
}

// TestViewerSeesWhyRefused: a key refused by the middleware at 12:00
// under api's minute, looked at by a person who may only look at
// 12:01:10, when that window has ended (its count is 0 again): the page
// without a key lists it under "Limited now" with its 3 refusals, its
// link opens the key's page, and that page shows the refused window,
// its policy and the count. A key only admitted is not listed.
func TestViewerSeesWhyRefused(t *testing.T) {
	browser := startBrowser(t)
	s := newSiteFor(t, nil, console.Look, withRefusals)
	if got := s.call(t, "198.51.100.7", 2, 0); got != 0 {
		t.Fatalf("refused %d of 2 at 5 a minute, want 0", got)
	}
	if got := s.call(t, "203.0.113.42", 8, 5*time.Second); got != 3 { // 12:00:20 to 12:00:55, refused from 12:00:45
		t.Fatalf("refused %d of 8 at 5 a minute, want 3", got)
	}
	s.clk.Advance(10 * time.Second) // 12:01:10: the refused minute ended at 12:01:00

	tab := newTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url)); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, `#limited h2`, "Limited now")
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`#limited tr.limited`))); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"203.0.113.42", "3", "2026-07-31T12:00:45Z", "2026-07-31T12:00:55Z", "api"}}
	if got := rows(t, tab, `#limited tbody tr`); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("limited now: %q, want %q", got, want)
	}

	loaded := chromedp.Events(tab, page.LoadEventFired) // the key's page, once the link is followed
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#limited tr.limited a`))); err != nil {
		t.Fatal(err)
	}
	for _, err := range loaded {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	waitText(t, tab, `#key-name`, "203.0.113.42")
	if err := chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`#refused`)), chromedp.WaitVisible(chromedp.CSS(`#look-only`))); err != nil {
		t.Fatal(err)
	}
	if href, err := chromedp.Run(tab, chromedp.Evaluate[string](`location.href`)); err != nil || href != s.url+"?key=203.0.113.42" {
		t.Fatalf("the link led to %q, %v; want the key's page", href, err)
	}
	waitText(t, tab, cell("limiters.0.windows.0.used"), "0") // the refused window is over
	waitText(t, tab, `#refused h3`, "Refused in the last hour")
	waitText(t, tab, `#refused-count`, "3")
	want = [][]string{{"api", "1m0s", "5", "2026-07-31T12:00:00Z to 2026-07-31T12:01:00Z", "2026-07-31T12:00:45Z", "2026-07-31T12:00:55Z", "3"}}
	if got := rows(t, tab, `#refused tbody tr`); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("refused runs: %q, want %q", got, want)
	}
}

// TestMarkupKeyRendersAsText: a key that is a script, looked up through
// the form, is shown as text, in the heading, the title and the form; no
// script of it runs (no dialog opens, the page holds its one script).
func TestMarkupKeyRendersAsText(t *testing.T) {
	const xss = `<script>alert(1)</script>`
	browser := startBrowser(t)
	s := newSite(t, nil)
	s.spend(t, xss, 1)
	tab := newTab(t, browser)
	// A dialog that opens is reported, then closed, so that the page
	// goes on and the test ends with what it saw.
	dialog := make(chan string, 4)
	dialogs := chromedp.Events(tab, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			select {
			case dialog <- ev.Message:
			default:
			}
			_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	if err := chromedp.Do(tab,
		chromedp.Navigate(s.url),
		chromedp.WaitVisible(chromedp.CSS(`#key`)),
		chromedp.SendKeys(chromedp.CSS(`#key`), xss),
		chromedp.Click(chromedp.CSS(`form.lookup button`)),
		chromedp.WaitVisible(chromedp.CSS(`#usage`)),
	); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, `#key-name`, xss)
	waitText(t, tab, cell("limiters.0.windows.0.used"), "1")
	waitText(t, tab, `#live`, "updating every second") // the script ran, with the key in its URL
	got, err := chromedp.Run(tab, chromedp.Evaluate[[]string](`[
		String(document.scripts.length),
		document.title,
		document.querySelector("#key").value,
		atob(document.querySelector("#usage").dataset.key64.replace(/-/g, "+").replace(/_/g, "/")),
		String(document.querySelectorAll("#usage script, main script").length)]`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"1", xss + " · Rate limits", xss, xss, "0"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scripts, title, input, data-key64, scripts in main: %q, want %q", got, want)
	}
	select {
	case m := <-dialog:
		t.Fatalf("a dialog opened: %q", m)
	default:
	}
}

// TestChangesRefusedWithoutTokenOrOrigin: from the console's own page, a
// POST without the CSRF token is refused (403) and changes nothing; from
// a page of another origin (another port of the same host), a form
// that carries a valid token is refused too, by the origin check.
func TestChangesRefusedWithoutTokenOrOrigin(t *testing.T) {
	browser := startBrowser(t)
	s := newSite(t, nil)
	s.spend(t, "victim", 5)
	tab := newTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url+"?key=victim"), chromedp.WaitVisible(chromedp.CSS(`#usage`))); err != nil {
		t.Fatal(err)
	}
	status, err := chromedp.Run(tab, chromedp.Evaluate[int](`fetch("reset", {method: "POST",
		body: new URLSearchParams({key: "victim", reason: "no token"})}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusForbidden {
		t.Fatalf("a POST without the token from the page: status %d, %v; want 403", status, err)
	}
	if e := s.lastEvent(); e.Action != "reset" || e.Err == nil {
		t.Fatalf("the audit trail's last event %+v, want a refused reset", e)
	}
	if s.admitted(t, "victim") {
		t.Fatal("the key was reset by a POST without the token")
	}

	token := s.token(t)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%sreset">
<input name="key" value="victim"><input name="reason" value="forged"><input name="csrf_token" value="%s">
<button id="go">win a prize</button></form>`, s.url, token)
	}))
	defer evil.Close()
	if err := chromedp.Do(tab, chromedp.Navigate(evil.URL)); err != nil {
		t.Fatal(err)
	}
	loaded := chromedp.Events(tab, page.LoadEventFired) // the forged POST's answer
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`#go`))); err != nil {
		t.Fatal(err)
	}
	for _, err := range loaded {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	expr := `location.href === ` + js(s.url+"reset") + ` && document.body.innerText.includes("another origin")`
	if _, err := chromedp.Run(tab, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(waitTimeout))); err != nil {
		body, _ := chromedp.Run(tab, chromedp.Evaluate[string](`location.href + " " + document.body.innerText`))
		t.Fatalf("the forged form's answer: %q: %v", body, err)
	}
	if s.admitted(t, "victim") {
		t.Fatal("the key was reset by a form of another origin")
	}
}

// TestScreenshot takes the picture of the console docs/console.md shows:
// a key with part of its minute used and a slot held, the page updating.
// It writes it where CONSOLE_SCREENSHOT says (make console-screenshot
// sets docs/console.png), else to a temporary file, and checks it is a
// PNG of the page.
func TestScreenshot(t *testing.T) {
	browser := startBrowser(t)
	s := newSite(t, nil)
	s.spend(t, "cust-4711", 4)
	_, release, err := s.export.Acquire(context.Background(), "cust-4711")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	tab := newTab(t, browser)
	if err := chromedp.Do(tab, chromedp.Navigate(s.url+"?key=cust-4711"), chromedp.WaitVisible(chromedp.CSS(`#usage`))); err != nil {
		t.Fatal(err)
	}
	waitText(t, tab, `#live`, "updating every second")
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if len(png) < 1000 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot of %d bytes, not a PNG", len(png))
	}
	path := os.Getenv("CONSOLE_SCREENSHOT")
	if path == "" {
		path = t.TempDir() + "/console.png"
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%s bytes)", path, strconv.Itoa(len(png)))
}
