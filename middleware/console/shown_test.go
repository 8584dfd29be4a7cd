package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/middleware/console"
)

// TestHiddenCharactersShownEscaped: a key with a bidi override, a
// zero-width space or a control character is shown with each of them
// written out (\u202E), in the heading, the title and a listing, so
// that "cust-\u202e1174" cannot read as cust-4711.
func TestHiddenCharactersShownEscaped(t *testing.T) {
	for _, tc := range []struct{ key, heading, title string }{
		{"cust-\u202e1174", `cust-<span class="esc">\u202E</span>1174`, "cust-\\u202E1174"},
		{"zw\u200bkey", `zw<span class="esc">\u200B</span>key`, "zw\\u200Bkey"},
		{"nul\x00<b>", `nul<span class="esc">\u0000</span>&lt;b&gt;`, "nul\\u0000&lt;b&gt;"},
		{"plain", "plain", "plain"},
	} {
		t.Run(url.QueryEscape(tc.key), func(t *testing.T) {
			fx := newFixture(t, nil, func(c *console.Config) {
				c.List = func(context.Context, string) ([]string, error) { return []string{tc.key}, nil }
			})
			page := fx.get("/admin/limits/?key=" + url.QueryEscape(tc.key)).Body.String()
			for _, want := range []string{`<code id="key-name">` + tc.heading + `</code>`, "<title>" + tc.title + " · Rate limits</title>"} {
				if !strings.Contains(page, want) {
					t.Errorf("page lacks %s", want)
				}
			}
			if list := fx.get("/admin/limits/").Body.String(); !strings.Contains(list, "<code>"+tc.heading+"</code>") {
				t.Errorf("listing lacks <code>%s</code>", tc.heading)
			}
		})
	}
}

// TestReasonWithoutControlCharacters: a reason with a line break, a NUL,
// a bidi override or a line separator is refused (400), nothing is
// changed, and the audit trail gets no such reason.
func TestReasonWithoutControlCharacters(t *testing.T) {
	fx := newFixture(t, nil, nil)
	token := fx.token(t)
	for _, reason := range []string{"ok\nadmin reset victim ok", "a\rb", "a\x00b", "ticket \u202e1174", "a\u2028b", "tab\there"} {
		t.Run(url.QueryEscape(reason), func(t *testing.T) {
			if err := fx.api.Reset(context.Background(), "acme"); err != nil {
				t.Fatal(err)
			}
			fx.spend(t, "acme", 1)
			w := fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {reason}, "csrf_token": {token}})
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "control or invisible character") {
				t.Fatalf("status %d; want 400 saying why", w.Code)
			}
			if fx.used(t, "acme") == 0 {
				t.Fatal("the key was reset")
			}
			for _, e := range fx.takeEvents() {
				if strings.ContainsFunc(e.Reason, func(r rune) bool { return r < ' ' || r >= 0x2000 }) {
					t.Fatalf("event %+v carries the bad reason", e)
				}
			}
		})
	}
}

// TestPolicyWithControlCharactersNotAudited: a refund naming a policy
// with a line break is refused (no limiter has it), and the audit event
// does not carry that name.
func TestPolicyWithControlCharactersNotAudited(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 1)
	form := url.Values{"key": {"acme"}, "reason": {"r"}, "policy": {"api\nadmin refund ok"}, "amount": {"1"}, "csrf_token": {fx.token(t)}}
	if w := fx.postForm("/admin/limits/refund", form); w.Code != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", w.Code)
	}
	ev := fx.takeEvents()
	if len(ev) == 0 || ev[0].Action != "refund" || ev[0].Key != "acme" || strings.Contains(ev[0].Policy, "\n") {
		t.Fatalf("events %+v, want a refused refund of acme without the policy's line break", ev)
	}
}
