package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// The console lab serve mounts: open to loopback clients and to no one
// else, it lists the keys the server has decided for, shows a client's
// window fill, resets it (the client is admitted again), and logs each
// action.
func TestServeConsole(t *testing.T) {
	cfg, err := parseServeFlags([]string{"--limit", "2"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.clock = limitertest.New(time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC))
	store, closeStore, err := openStore(context.Background(), cfg.store)
	if err != nil {
		t.Fatal(err)
	}
	defer closeStore()
	var logs syncBuffer
	h, err := newServeHandler(cfg, store, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	serve := func(method, target, remote, body string, hdr ...string) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		r.RemoteAddr = remote
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	const client = "127.0.0.1:40000"
	for range 3 {
		serve(http.MethodGet, "/api/fixed-window", client, "")
	}
	if w := serve(http.MethodGet, "/api/fixed-window", client, ""); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a fourth of 2: %d, want 429", w.Code)
	}
	for _, remote := range []string{"192.0.2.7:5000", "[2001:db8::1]:5000"} {
		if w := serve(http.MethodGet, "/admin/limits/usage?key=127.0.0.1", remote, ""); w.Code != http.StatusForbidden || strings.Contains(w.Body.String(), "127.0.0.1") {
			t.Fatalf("console from %s: %d %q, want 403 saying nothing", remote, w.Code, w.Body.String())
		}
	}
	var keys struct{ Keys []string }
	if err := json.NewDecoder(serve(http.MethodGet, "/admin/limits/keys", "[::1]:40001", "").Body).Decode(&keys); err != nil || len(keys.Keys) != 1 || keys.Keys[0] != "127.0.0.1" {
		t.Fatalf("keys listed: %+v, %v; want the one client", keys, err)
	}
	var u struct {
		Token    string `json:"csrf_token"`
		Limiters []struct {
			Policy  string
			Windows []struct{ Used, Limit int64 }
		}
	}
	if err := json.NewDecoder(serve(http.MethodGet, "/admin/limits/usage?key=127.0.0.1", client, "").Body).Decode(&u); err != nil {
		t.Fatal(err)
	}
	if w := u.Limiters[0].Windows[0]; u.Limiters[0].Policy != "fixed-window" || w.Used != 2 || w.Limit != 2 {
		t.Fatalf("usage %+v, want 2 of 2 under fixed-window", u)
	}
	w := serve(http.MethodPost, "/admin/limits/reset", client, `{"key":"127.0.0.1","reason":"lab"}`,
		"Content-Type", "application/json", "X-CSRF-Token", u.Token)
	if w.Code != http.StatusOK {
		t.Fatalf("reset: %d %s", w.Code, w.Body.String())
	}
	if w := serve(http.MethodGet, "/api/fixed-window", client, ""); w.Code != http.StatusOK {
		t.Fatalf("after the reset: %d, want 200", w.Code)
	}
	for _, want := range []string{
		`msg=console who=loopback action=reset key=127.0.0.1 reason=lab`,
		`level=WARN msg="console refused a client that is not on loopback" remote_addr=192.0.2.7:5000`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}
