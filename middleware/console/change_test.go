package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// TestResetFromThePage: the page's form resets a key that was refused;
// the answer sends the browser back to the key's page, which says so;
// the observer hears who reset which key, why and when.
func TestResetFromThePage(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 5)
	if d, _ := fx.api.Allow(context.Background(), "acme", 1); d.Allowed {
		t.Fatal("a sixth of 5 admitted")
	}
	form := url.Values{"key": {"acme"}, "reason": {"  ticket 4711: refused by our bug  "}, "csrf_token": {fx.token(t)}, "confirm": {"reset"}}
	w := fx.postForm("/admin/limits/reset", form)
	loc := w.Header().Get("Location")
	if w.Code != http.StatusSeeOther || !strings.HasPrefix(loc, "./?key=acme&done=") {
		t.Fatalf("status %d, Location %q; want 303 to ./?key=acme&done=...", w.Code, loc)
	}
	if d, err := fx.api.Allow(context.Background(), "acme", 1); err != nil || !d.Allowed {
		t.Fatalf("after the reset: %+v, %v; want admitted", d, err)
	}
	ev := fx.takeEvents()
	if len(ev) != 1 || ev[0].Action != "reset" || ev[0].Who != admin || ev[0].Key != "acme" ||
		ev[0].Reason != "ticket 4711: refused by our bug" || ev[0].Err != nil || !ev[0].At.Equal(t0) {
		t.Fatalf("events %+v, want one reset of acme by %s, its reason trimmed", ev, admin)
	}
	page := fx.get("/admin/limits/" + loc[len("./"):])
	if !strings.Contains(page.Body.String(), "Key reset at 2026-07-31 12:00:10 UTC") {
		t.Fatalf("the page after a reset does not say so:\n%s", page.Body.String())
	}
}

// TestResetFromAScript: the JSON door takes the token in a header, and
// answers with the key's usage after the change.
func TestResetFromAScript(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.spend(t, "acme", 4)
	w := fx.postJSON("/admin/limits/reset", `{"key":"acme","reason":"script"}`, fx.token(t))
	var u usageJSON
	decode(t, w, &u)
	if w.Code != http.StatusOK || u.Done != "reset" || u.Key != "acme" || u.Limiters[0].Windows[0].Used != 0 {
		t.Fatalf("status %d, %+v; want 200, done reset, nothing used", w.Code, u)
	}
	w = fx.postJSON("/admin/limits/refund", `{"key":"acme","reason":"script","policy":"api","amount":0}`, fx.token(t))
	var e struct {
		Error string `json:"error"`
	}
	decode(t, w, &e)
	if w.Code != http.StatusBadRequest || !strings.Contains(e.Error, "at least 1") {
		t.Fatalf("a refund of 0: status %d, %+v", w.Code, e)
	}
}

// TestRefund: a refund gives units back under one limiter; 0, a negative
// or a non-number, one past what the key used, an unknown limiter and
// one without a reason are refused with a reason, and change nothing.
func TestRefund(t *testing.T) {
	for _, tc := range []struct {
		name       string
		policy     string
		amount     string
		reason     string
		wantStatus int
		wantBody   string
		wantUsed   int64
	}{
		{"refunds_what_was_used", "api", "2", "double charge", http.StatusSeeOther, "", 1},
		{"refunds_all_that_was_used", "api", "3", "double charge", http.StatusSeeOther, "", 0},
		{"zero", "api", "0", "r", http.StatusBadRequest, "refund amount 0: must be at least 1", 3},
		{"negative", "api", "-2", "r", http.StatusBadRequest, "refund amount -2: must be at least 1", 3},
		{"not_a_number", "api", "lots", "r", http.StatusBadRequest, "amount &#34;lots&#34; is not a whole number", 3},
		{"past_what_was_used", "api", "4", "r", http.StatusConflict, "refund of 4 is past what the key used under &#34;api&#34; (3 at most in any window now): nothing refunded", 3},
		{"unknown_limiter", "nope", "1", "r", http.StatusBadRequest, "no limiter has policy &#34;nope&#34;", 3},
		{"no_reason", "api", "1", "  ", http.StatusBadRequest, "a reason is required", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, nil, nil)
			fx.spend(t, "acme", 3)
			form := url.Values{"key": {"acme"}, "policy": {tc.policy}, "amount": {tc.amount}, "reason": {tc.reason}, "csrf_token": {fx.token(t)}}
			w := fx.postForm("/admin/limits/refund", form)
			if w.Code != tc.wantStatus || !strings.Contains(w.Body.String(), tc.wantBody) {
				t.Fatalf("status %d, body %s; want %d with %q", w.Code, w.Body.String(), tc.wantStatus, tc.wantBody)
			}
			if got := fx.used(t, "acme"); got != tc.wantUsed {
				t.Fatalf("used %d after the refund, want %d", got, tc.wantUsed)
			}
			ev := fx.takeEvents()
			if len(ev) < 1 || ev[0].Action != "refund" || ev[0].Key != "acme" || ev[0].Who != admin || (ev[0].Err == nil) != (tc.wantStatus == http.StatusSeeOther) {
				t.Fatalf("events %+v", ev)
			}
			if tc.wantStatus == http.StatusSeeOther && (ev[0].Policy != "api" || ev[0].Amount != mustAtoi(t, tc.amount) || ev[0].Reason != tc.reason) {
				t.Fatalf("event %+v, want policy api, amount %s, reason %q", ev[0], tc.amount, tc.reason)
			}
			if tc.wantStatus != http.StatusSeeOther && !strings.Contains(w.Body.String(), `data-path="limiters.0.windows.0.used">3<`) {
				t.Fatalf("a refused refund's page does not show the key's usage:\n%s", w.Body.String())
			}
		})
	}
}

// TestChangesNeedTokenAndOrigin: a reset or a refund without the token,
// with another person's, or from another origin even with the token, is
// refused with 403 and changes nothing. A script's POST (no Origin, no
// Sec-Fetch-Site) is from no browser, and its token is checked alone.
func TestChangesNeedTokenAndOrigin(t *testing.T) {
	fx := newFixture(t, nil, nil)
	token := fx.token(t)
	for _, tc := range []struct {
		name  string
		token string
		hdr   []string
		want  string
	}{
		{"no_token", "", nil, "missing or invalid CSRF token"},
		{"wrong_token", token[:len(token)-4] + "AAAA", nil, "missing or invalid CSRF token"},
		{"another_persons_token", token, []string{"X-Test-Who", "mallory"}, "missing or invalid CSRF token"},
		{"cross_site", token, []string{"Sec-Fetch-Site", "cross-site"}, "another origin"},
		{"same_site_other_origin", token, []string{"Sec-Fetch-Site", "same-site"}, "another origin"},
		{"origin_not_host", token, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}, "another origin"},
	} {
		for _, action := range []string{"reset", "refund"} {
			t.Run(tc.name+"/"+action, func(t *testing.T) {
				fx.spend(t, "acme", 1)
				form := url.Values{"key": {"acme"}, "reason": {"r"}, "policy": {"api"}, "amount": {"1"}, "csrf_token": {tc.token}}
				w := fx.postForm("/admin/limits/"+action, form, tc.hdr...)
				if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), tc.want) || strings.Contains(w.Body.String(), "acme") {
					t.Fatalf("status %d, body %q; want 403 saying %q, not the key", w.Code, w.Body.String(), tc.want)
				}
				if fx.used(t, "acme") != 1 {
					t.Fatal("a refused change changed the key")
				}
				if ev := fx.takeEvents(); len(ev) != 1 || ev[0].Action != action || ev[0].Err == nil || ev[0].Who != admin && tc.name != "another_persons_token" || ev[0].Key != "acme" || ev[0].Reason != "" {
					t.Fatalf("events %+v, want one refused %s naming the key it aimed at", ev, action)
				}
				if err := fx.api.Reset(context.Background(), "acme"); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
	w := fx.postJSON("/admin/limits/reset", `{"key":"acme","reason":"r"}`, "")
	if w.Code != http.StatusForbidden {
		t.Fatalf("a script's POST without a token: %d, want 403", w.Code)
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
