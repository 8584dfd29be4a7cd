package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

func TestServeRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantMsg string
	}{
		{"limit_zero", []string{"--limit", "0"}, "--limit 0: must be at least 1; e.g. --limit 10"},
		{"limit_negative", []string{"--limit=-3"}, "--limit -3: must be at least 1; e.g. --limit 10"},
		{"limit_not_a_number", []string{"--limit", "ten"}, "--limit ten: not a whole number; e.g. --limit 10"},
		{"window_zero", []string{"--window", "0"}, "--window 0: must be at least 1ms; e.g. --window 1m"},
		{"window_under_1ms", []string{"--window", "500us"}, "--window 500us: must be at least 1ms; e.g. --window 1m"},
		{"window_negative", []string{"--window", "-1m"}, "--window -1m: must be at least 1ms; e.g. --window 1m"},
		{"window_not_whole_ms", []string{"--window", "1500us"}, "--window 1500us: must be a whole number of milliseconds; e.g. --window 1m"},
		{"window_not_a_duration", []string{"--window", "soon"}, "--window soon: not a duration; e.g. --window 1m"},
		{"unknown_store", []string{"--store", "disk"}, "--store disk: must be memory or redis; e.g. --store redis"},
		{"empty_addr", []string{"--addr", ""}, "--addr \"\": must not be empty; e.g. --addr 127.0.0.1:8080"},
		{"limit_over_exact_budget", []string{"--limit", "9007199254740993", "--window", "1ms"}, "exact integer budget"},
		{"unknown_flag", []string{"--burst", "3"}, "--burst: no such flag; the flags are --addr, --fail-open, --lease, --limit, --redis-addr, --store, --window"},
		{"lease_without_redis", []string{"--lease"}, "--lease true: leases quota out of Redis, so it needs --store redis; e.g. --lease --store redis"},
		{"window_missing_value", []string{"--window"}, "--window: needs a value; e.g. --window 1m"},
		{"single_dash_as_typed", []string{"-limit", "0"}, "-limit 0: must be at least 1; e.g. -limit 10"},
		{"bool_not_bool", []string{"--fail-open=maybe"}, "--fail-open maybe: not true or false; e.g. --fail-open"},
		{"stray_argument", []string{"now"}, "unexpected argument \"now\"; lab serve takes flags only (lab serve -h)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"serve"}, tt.args...), &stdout, &stderr)
			if code != 2 {
				t.Errorf("serve %q: exit %d, want 2", tt.args, code)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.HasPrefix(msg, "lab serve: ") {
				t.Errorf("serve %q: stderr = %q, want one line starting %q", tt.args, msg, "lab serve: ")
			}
			if !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("serve %q: stderr = %q, want it to contain %q", tt.args, msg, tt.wantMsg)
			}
		})
	}
}

func TestServeHelpExitsZero(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "-h"}, &stdout, &stderr); code != 0 {
		t.Fatalf("serve -h: exit %d, want 0", code)
	}
	for _, flag := range []string{"-addr", "-limit", "-window", "-store", "-redis-addr", "-fail-open", "-lease"} {
		if !strings.Contains(stderr.String(), flag) {
			t.Errorf("serve -h does not list %s:\n%s", flag, stderr.String())
		}
	}
}

func TestServeListenErrorExitsOne(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--addr", "127.0.0.1:99999"}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "99999") {
		t.Errorf("stderr = %q, want the bad address named", stderr.String())
	}
}

// The whole server in process, on a loopback port, on a fake clock: the
// limited route admits 3 then refuses, the demo route never does, and
// cancelling the context stops it cleanly.
func TestServeInProcess(t *testing.T) {
	t0 := time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC)
	cfg, err := parseServeFlags([]string{"--addr", "127.0.0.1:0", "--limit", "3", "--window", "1m"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg.clock = limitertest.New(t0)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs syncBuffer
	addrc := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, cfg, &logs, func(a net.Addr) { addrc <- a }) }()
	var base string
	select {
	case a := <-addrc:
		base = "http://" + a.String()
	case err := <-done:
		t.Fatalf("serve ended before listening: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start within 10s")
	}
	client := &http.Client{Timeout: 10 * time.Second}
	reset := strconv.FormatInt(t0.Truncate(time.Minute).Add(time.Minute).Unix(), 10)
	for i, want := range []struct {
		status          int
		remaining, wait string
	}{{200, "2", ""}, {200, "1", ""}, {200, "0", ""}, {429, "0", "50"}, {429, "0", "50"}} {
		res, body := fetch(t, client, base+"/api/fixed-window")
		if res.StatusCode != want.status {
			t.Fatalf("fixed-window call %d: status %d, want %d", i+1, res.StatusCode, want.status)
		}
		for name, v := range map[string]string{"X-RateLimit-Limit": "3", "X-RateLimit-Remaining": want.remaining, "X-RateLimit-Reset": reset, "Retry-After": want.wait} {
			if got := res.Header.Get(name); got != v {
				t.Errorf("fixed-window call %d: %s = %q, want %q", i+1, name, got, v)
			}
		}
		if want.status == 200 && body != `{"status":"ok","endpoint":"fixed-window"}`+"\n" {
			t.Errorf("fixed-window call %d: body %q", i+1, body)
		}
	}
	for i := range 10 {
		res, _ := fetch(t, client, base+"/api/demo")
		if res.StatusCode != 200 || res.Header.Get("X-RateLimit-Limit") != "" {
			t.Fatalf("demo call %d: status %d, X-RateLimit-Limit %q; want 200 and no header", i+1, res.StatusCode, res.Header.Get("X-RateLimit-Limit"))
		}
	}
	// A console page left open holds a stream of updates: stopping the
	// server ends it rather than waiting it out.
	sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer scancel()
	sreq, _ := http.NewRequestWithContext(sctx, http.MethodGet, base+"/admin/limits/events?key=127.0.0.1", nil)
	stream, err := client.Do(sreq)
	if err != nil || stream.StatusCode != http.StatusOK {
		t.Fatalf("console stream: %v, %v", stream, err)
	}
	defer stream.Body.Close()
	stopped := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel, want nil", err)
		}
		if took := time.Since(stopped); took >= shutdownGrace {
			t.Fatalf("serve took %v to stop with a console stream open: it waited the stream out", took)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of cancel")
	}
	if _, err := client.Get(base + "/api/demo"); err == nil {
		t.Error("server still answers after stopping")
	}
	for _, want := range []string{"msg=listening", "limit=3", "window=1m0s", "store=memory", "msg=\"shutting down\"", "msg=stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
	// The first line says where the console is, and to whom it is open.
	first, _, _ := strings.Cut(logs.String(), "\n")
	for _, want := range []string{"msg=listening url=" + base + " console=" + base + "/admin/limits/ console_open_to=loopback "} {
		if !strings.Contains(first, want) {
			t.Errorf("first line %q lacks %q", first, want)
		}
	}
}

func TestOpenStore(t *testing.T) {
	s, closeStore, err := openStore(context.Background(), storeConfig{Kind: "memory"})
	if err != nil || s == nil {
		t.Fatalf("openStore(memory) = %v, %v", s, err)
	}
	if err := closeStore(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, _, err := openStore(context.Background(), storeConfig{Kind: "disk"}); err == nil || !strings.Contains(err.Error(), `"disk"`) {
		t.Errorf("openStore(disk) error = %v, want one naming the kind", err)
	}
}

func fetch(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	res, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: read: %v", url, err)
	}
	return res, string(b)
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --fail-open decides what a failing store means: 500 without it, the
// handler with it. A closed memory store stands in for one that is down.
func TestServeFailOpen(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantStatus int
	}{
		{"fail_closed_by_default", nil, http.StatusInternalServerError},
		{"fail_open", []string{"--fail-open"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := parseServeFlags(tt.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			store, closeStore, err := openStore(context.Background(), cfg.store)
			if err != nil {
				t.Fatal(err)
			}
			if err := closeStore(); err != nil {
				t.Fatal(err)
			}
			var logs syncBuffer
			h, err := newServeHandler(cfg, store, slog.New(slog.NewTextHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(http.MethodGet, "/api/fixed-window", nil)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.wantStatus {
				t.Fatalf("status = %d, want %d", w.Code, tt.wantStatus)
			}
			if strings.Contains(w.Body.String(), "closed") {
				t.Errorf("body %q leaks the store error", w.Body.String())
			}
			if !strings.Contains(logs.String(), "limiter failed") {
				t.Errorf("the failure was not logged:\n%s", logs.String())
			}
		})
	}
}
