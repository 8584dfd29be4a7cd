package console_test

import (
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestViewerSeesNoForm: a person who may only look sees the key's
// usage, and no form to reset or refund, and is handed no token.
func TestViewerSeesNoForm(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 2)
	page := fx.get("/admin/limits/?key=acme", "X-Test-Role", "viewer").Body.String()
	if !strings.Contains(page, `data-path="limiters.0.windows.0.used">2<`) || !strings.Contains(page, `id="look-only"`) {
		t.Fatalf("a viewer's page lacks the usage or the look-only hint:\n%s", page)
	}
	for _, no := range []string{`class="reset"`, `class="refund"`, `csrf_token`} {
		if strings.Contains(page, no) {
			t.Errorf("a viewer's page has %s", no)
		}
	}
	if body := fx.get("/admin/limits/usage?key=acme", "X-Test-Role", "viewer").Body.String(); strings.Contains(body, "csrf_token") {
		t.Errorf("a viewer's JSON has a token: %s", body)
	}
	if page := fx.get("/admin/limits/?key=acme").Body.String(); !strings.Contains(page, `class="reset"`) || !strings.Contains(page, `class="refund"`) {
		t.Error("a person who may change sees no forms")
	}
}

// TestViewerForgingAChangeIsRefused: a viewer's reset or refund, even
// with a valid token of their name (from when they could change), from
// the page or a script, is a 403 that changes nothing, audited with the
// key.
func TestViewerForgingAChangeIsRefused(t *testing.T) {
	fx := newFixture(t, nil, nil)
	token := fx.token(t) // admin's, as a viewer named admin would have kept it
	fx.spend(t, "acme", 3)
	for _, tc := range []struct {
		name string
		do   func() *httptestRecorder
	}{
		{"reset_form", func() *httptestRecorder {
			return fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}}, "X-Test-Role", "viewer")
		}},
		{"refund_form", func() *httptestRecorder {
			return fx.postForm("/admin/limits/refund", url.Values{"key": {"acme"}, "reason": {"r"}, "policy": {"api"}, "amount": {"1"}, "csrf_token": {token}}, "X-Test-Role", "viewer")
		}},
		{"reset_json", func() *httptestRecorder {
			r := newRequest(http.MethodPost, "/admin/limits/reset")
			return fx.serve(withJSON(r, `{"key":"acme","reason":"r"}`), []string{"X-CSRF-Token", token, "X-Test-Role", "viewer"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.do()
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "may look, not change") {
				t.Fatalf("status %d, body %q; want 403 saying the viewer may look, not change", w.Code, w.Body.String())
			}
			if got := fx.used(t, "acme"); got != 3 {
				t.Fatalf("a viewer's change changed the key: %d used, want 3", got)
			}
			ev := fx.takeEvents()
			if len(ev) != 1 || ev[0].Key != "acme" || ev[0].Who != admin || ev[0].Err == nil || !strings.Contains(ev[0].Err.Error(), "may look") {
				t.Fatalf("events %+v, want one refused change of acme", ev)
			}
		})
	}
}

// withJSON gives r body as JSON.
func withJSON(r *http.Request, body string) *http.Request {
	r.Body = io.NopCloser(strings.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// TestResetNeedsConfirmation: the page's Reset has a box to tick, and a
// form's reset without it is refused (400) and resets nothing; a
// script's JSON needs none.
func TestResetNeedsConfirmation(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 3)
	if page := fx.get("/admin/limits/?key=acme").Body.String(); !strings.Contains(page, `<input type="checkbox" id="reset-confirm" name="confirm" value="reset" required>`) {
		t.Fatalf("the page's reset form has no confirmation box:\n%s", page)
	}
	w := fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {fx.token(t)}})
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "confirm the reset") {
		t.Fatalf("an unconfirmed reset: status %d; want 400 asking to confirm", w.Code)
	}
	if got := fx.used(t, "acme"); got != 3 {
		t.Fatalf("an unconfirmed reset changed the key: %d used", got)
	}
	if w := fx.postJSON("/admin/limits/reset", `{"key":"acme","reason":"r"}`, fx.token(t)); w.Code != http.StatusOK || fx.used(t, "acme") != 0 {
		t.Fatalf("a script's reset: status %d, %d used", w.Code, fx.used(t, "acme"))
	}
}
