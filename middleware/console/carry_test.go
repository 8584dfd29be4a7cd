package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/fixedwindow/ratelimit/middleware/console"
)

// hiddenRE finds a hidden input of a form, as the page writes it.
var hiddenRE = regexp.MustCompile(`<input type="hidden" name="([a-z0-9_]+)" value="([^"]*)">`)

// browserForm returns the hidden inputs of the page's form of class
// class as a browser submits them: the attribute's value unescaped, then
// every line break made CR LF (the HTML standard's form submission).
func browserForm(t *testing.T, page, class string) url.Values {
	t.Helper()
	_, form, ok := strings.Cut(page, `<form class="`+class+`"`)
	if !ok {
		t.Fatalf("page has no %s form", class)
	}
	form, _, _ = strings.Cut(form, "</form>")
	v := url.Values{}
	for _, m := range hiddenRE.FindAllStringSubmatch(form, -1) {
		s := html.UnescapeString(m[2])
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
		v.Set(m[1], strings.ReplaceAll(s, "\n", "\r\n"))
	}
	return v
}

// TestEveryKeyShownIsActedOn: a key with NUL, CR or LF, looked up by
// its query, is the key the page's Reset resets and its live view
// watches, not one an HTML attribute or a form's submission made of it.
func TestEveryKeyShownIsActedOn(t *testing.T) {
	for _, key := range []string{"nul\x00key", "lf\nkey", "cr\rkey", "crlf\r\nkey", "tab\tkey", "plain"} {
		t.Run(url.QueryEscape(key), func(t *testing.T) {
			fx := newFixture(t, nil, nil)
			fx.spend(t, key, 5)
			for _, other := range []string{"lf\r\nkey", "cr\r\nkey", "nul\uFFFDkey"} {
				if other != key {
					fx.spend(t, other, 1)
				}
			}
			page := fx.get("/admin/limits/?key=" + url.QueryEscape(key)).Body.String()
			form := browserForm(t, page, "reset")
			form.Set("reason", "test")
			form.Set("confirm", "reset") // the box the person ticks
			if w := fx.postForm("/admin/limits/reset", form); w.Code != http.StatusSeeOther {
				t.Fatalf("reset: status %d, body %q", w.Code, w.Body.String())
			}
			if got := fx.used(t, key); got != 0 {
				t.Fatalf("after the page's Reset, %q has %d used, want 0", key, got)
			}
			ev := fx.takeEvents()
			if last := ev[len(ev)-1]; last.Action != "reset" || last.Key != key || last.Err != nil {
				t.Fatalf("event %+v, want a reset of %q", last, key)
			}
			_, attr, ok := strings.Cut(page, `data-key64="`)
			if !ok {
				t.Fatal("page has no data-key64 for its live view")
			}
			attr, _, _ = strings.Cut(attr, `"`)
			var live usageJSON
			decode(t, fx.get("/admin/limits/usage?key64="+url.QueryEscape(html.UnescapeString(attr))), &live)
			if live.Key != key {
				t.Fatalf("the live view watches %q, want %q", live.Key, key)
			}
		})
	}
}

// TestBadKey64IsRefused: a key64 that is no base64url is a 400 on every
// route that takes one, and nothing is reset.
func TestBadKey64IsRefused(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 1)
	form := url.Values{"key64": {"!!"}, "reason": {"r"}, "csrf_token": {fx.token(t)}}
	for name, w := range map[string]*httptestRecorder{
		"usage":  fx.get("/admin/limits/usage?key64=!!"),
		"events": fx.get("/admin/limits/events?key64=!!"),
		"reset":  fx.postForm("/admin/limits/reset", form),
	} {
		if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "key64 is not base64url") {
			t.Errorf("%s: status %d, body %q; want 400", name, w.Code, w.Body.String())
		}
	}
	if fx.used(t, "acme") != 1 {
		t.Fatal("a bad key64 reset a key")
	}
}

// TestRefusedPrefixIsNotEchoed: a prefix refused as too long or not
// UTF-8 is not written back into the page: the 400 page is small and
// UTF-8.
func TestRefusedPrefixIsNotEchoed(t *testing.T) {
	fx := newFixture(t, nil, func(c *console.Config) {
		c.List = func(context.Context, string) ([]string, error) { return nil, nil }
	})
	for name, prefix := range map[string]string{
		"oversized": strings.Repeat("p", 900_000),
		"not_utf8":  "cust-\xff\xfe",
	} {
		t.Run(name, func(t *testing.T) {
			w := fx.get("/admin/limits/?prefix=" + url.QueryEscape(prefix))
			if w.Code != http.StatusBadRequest {
				t.Fatalf("status %d, want 400", w.Code)
			}
			if w.Body.Len() > 8<<10 || !utf8.Valid(w.Body.Bytes()) {
				t.Fatalf("400 page of %d bytes, UTF-8 %v; want under 8 KiB and UTF-8", w.Body.Len(), utf8.Valid(w.Body.Bytes()))
			}
		})
	}
}

// TestHeadOfStreamEnds: a HEAD of the live view answers its headers and
// ends at once, reading nothing; a GET streams until its client goes.
func TestHeadOfStreamEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newFixture(t, nil, nil)
		for _, method := range []string{http.MethodHead, http.MethodGet} {
			ctx, cancel := context.WithCancel(context.Background())
			r := newRequest(method, "/admin/limits/events?key=acme").WithContext(ctx)
			done := make(chan *httptestRecorder)
			go func() { done <- fx.serve(r, nil) }()
			synctest.Wait()
			var w *httptestRecorder
			select {
			case w = <-done:
			default:
			}
			cancel()
			switch {
			case method == http.MethodHead && w == nil:
				<-done
				t.Fatal("a HEAD of the stream is still streaming")
			case method == http.MethodHead && (w.Code != http.StatusOK || w.Header().Get("Content-Type") != "text/event-stream" || w.Body.Len() != 0):
				t.Fatalf("HEAD: status %d, type %q, %d bytes", w.Code, w.Header().Get("Content-Type"), w.Body.Len())
			case method == http.MethodGet && w != nil:
				t.Fatal("a GET of the stream ended before its client went")
			case method == http.MethodGet:
				<-done
			}
		}
	})
}
