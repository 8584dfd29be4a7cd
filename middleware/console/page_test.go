package console_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/middleware/console"
)

// TestPageShowsEveryWindow: the page shows the key's windows, the cap's
// slots and the forms to change them, each cell named by its JSON path
// for the live updates.
func TestPageShowsEveryWindow(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 5)
	w := fx.get("/admin/limits/?key=acme")
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, type %q", w.Code, w.Header().Get("Content-Type"))
	}
	for _, want := range []string{
		`<code id="key-name">acme</code>`,
		`data-path="limiters.0.windows.0.used">5<`,
		`data-path="limiters.0.windows.0.remaining">0<`,
		`data-path="limiters.0.windows.1.reset_local">2026-08-01 00:00:00 CEST<`,
		`data-path="caps.0.held">0<`,
		`<input type="hidden" name="csrf_token" value="` + fx.token(t) + `">`,
		`action="reset"`, `action="refund"`, `<script src="console.js" defer></script>`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %s", want)
		}
	}
	if strings.Contains(body, `id="keys"`) {
		t.Error("the page lists keys with no lister")
	}
	for _, asset := range []string{"console.js", "console.css"} {
		if w := fx.get("/admin/limits/" + asset); w.Code != http.StatusOK || w.Body.Len() == 0 {
			t.Errorf("%s: status %d, %d bytes", asset, w.Code, w.Body.Len())
		}
	}
}

// TestPageEscapesEverything: a key, or a listed key, that is markup is
// shown as text: in the page's text, in attributes and in links.
func TestPageEscapesEverything(t *testing.T) {
	const xss = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`
	fx := newFixture(t, nil, func(c *console.Config) {
		c.List = func(context.Context, string) ([]string, error) { return []string{xss}, nil }
	})
	fx.spend(t, xss, 1)
	for _, target := range []string{"/admin/limits/?key=" + url.QueryEscape(xss), "/admin/limits/"} {
		body := fx.get(target).Body.String()
		for _, bad := range []string{"<script>alert", "<img", `"'>`} {
			if strings.Contains(body, bad) {
				t.Errorf("%s: the page holds %q unescaped", target, bad)
			}
		}
		if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s: the key is not shown as text", target)
		}
	}
}

// TestListOnlyWithALister: with no lister there is no listing at all;
// with one, the page and the JSON list the first 100 keys of a prefix,
// and the observer hears of it.
func TestListOnlyWithALister(t *testing.T) {
	fx := newFixture(t, nil, nil)
	if w := fx.get("/admin/limits/keys?prefix="); w.Code != http.StatusNotFound {
		t.Fatalf("keys with no lister: %d, want 404", w.Code)
	}
	var keys []string
	for i := range 150 {
		keys = append(keys, fmt.Sprintf("cust-%03d", i))
	}
	fx = newFixture(t, nil, func(c *console.Config) {
		c.List = func(_ context.Context, prefix string) ([]string, error) {
			var out []string
			for _, k := range keys {
				if strings.HasPrefix(k, prefix) {
					out = append(out, k)
				}
			}
			return out, nil
		}
	})
	var got struct {
		Keys []string `json:"keys"`
		More bool     `json:"more"`
	}
	decode(t, fx.get("/admin/limits/keys?prefix=cust-1"), &got)
	if len(got.Keys) != 50 || got.More || got.Keys[0] != "cust-100" {
		t.Fatalf("prefix cust-1: %d keys, more %v", len(got.Keys), got.More)
	}
	decode(t, fx.get("/admin/limits/keys?prefix="), &got)
	if len(got.Keys) != 100 || !got.More {
		t.Fatalf("every key: %d, more %v; want the first 100, and more", len(got.Keys), got.More)
	}
	page := fx.get("/admin/limits/?prefix=cust-14").Body.String()
	if !strings.Contains(page, `<a href="./?key=cust-149"><code>cust-149</code></a>`) || strings.Contains(page, "cust-150") {
		t.Fatalf("the page's listing of cust-14:\n%s", page)
	}
	ev := fx.takeEvents()
	if len(ev) != 3 || ev[0].Action != "list" || ev[0].Key != "cust-1" || ev[2].Key != "cust-14" {
		t.Fatalf("events %+v, want three lists", ev)
	}
}

// TestWatchStreamsUsage: the page's event stream sends the key's report
// at once and again every second, so a window seen filling fills; the
// observer hears of the stream once.
func TestWatchStreamsUsage(t *testing.T) {
	fx := newFixture(t, nil, nil)
	srv := httptest.NewServer(fx.h)
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/admin/limits/events?key=acme", nil)
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	events := bufio.NewScanner(res.Body)
	next := func() usageJSON {
		t.Helper()
		for events.Scan() {
			if data, ok := strings.CutPrefix(events.Text(), "data: "); ok {
				var u usageJSON
				if err := json.Unmarshal([]byte(data), &u); err != nil {
					t.Fatal(err)
				}
				return u
			}
		}
		t.Fatalf("stream ended: %v", events.Err())
		return usageJSON{}
	}
	if u := next(); u.Key != "acme" || u.Limiters[0].Windows[0].Used != 0 {
		t.Fatalf("first event %+v", u)
	}
	fx.spend(t, "acme", 2)
	if u := next(); u.Limiters[0].Windows[0].Used != 2 {
		t.Fatalf("next event %+v, want 2 used", u)
	}
	cancel()
	if ev := fx.takeEvents(); len(ev) != 1 || ev[0].Action != "watch" || ev[0].Key != "acme" {
		t.Fatalf("events %+v, want one watch", ev)
	}
}
