package console_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// TestTokenExpiresAndRotates: the CSRF token changes every hour by the
// console's clock; one is taken in its hour and the next, and refused
// after.
func TestTokenExpiresAndRotates(t *testing.T) {
	fx := newFixture(t, nil, nil)
	old := fx.token(t)
	reset := func(token string) int {
		fx.spend(t, "acme", 1)
		w := fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}, "confirm": {"reset"}})
		fx.takeEvents()
		return w.Code
	}
	if got := reset(old); got != http.StatusSeeOther {
		t.Fatalf("a fresh token: status %d, want 303", got)
	}
	fx.clk.Advance(time.Hour)
	next := fx.token(t)
	if next == old {
		t.Fatal("the token did not rotate in an hour")
	}
	if got := reset(old); got != http.StatusSeeOther {
		t.Fatalf("last hour's token: status %d, want 303", got)
	}
	fx.clk.Advance(time.Hour)
	if got := reset(old); got != http.StatusForbidden {
		t.Fatalf("a token two hours old: status %d, want 403", got)
	}
	if got := reset(next); got != http.StatusSeeOther {
		t.Fatalf("last hour's token: status %d, want 303", got)
	}
}

// TestObserverNeverSeesTheToken: the request an Event carries has no
// X-CSRF-Token header and no csrf_token in its form, for a form's POST
// and a script's, done or refused; the request served keeps them.
func TestObserverNeverSeesTheToken(t *testing.T) {
	fx := newFixture(t, nil, nil)
	token := fx.token(t)
	fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}, "confirm": {"reset"}})
	fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}, "confirm": {"reset"}}, "Sec-Fetch-Site", "cross-site")
	fx.postJSON("/admin/limits/reset", `{"key":"acme","reason":"r"}`, token)
	fx.postJSON("/admin/limits/refund", `{"key":"acme","reason":"r","policy":"api","amount":1}`, token)
	ev := fx.takeEvents()
	if len(ev) < 4 {
		t.Fatalf("%d events, want 4 and more", len(ev))
	}
	for _, e := range ev {
		r := e.Request
		if r.Header.Get("X-CSRF-Token") != "" || r.Form.Get("csrf_token") != "" || r.PostForm.Get("csrf_token") != "" {
			t.Fatalf("%s event's request carries the token: header %q, form %v", e.Action, r.Header.Get("X-CSRF-Token"), r.PostForm)
		}
	}
}
