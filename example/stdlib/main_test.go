package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestMain fails the package if a goroutine (a test server, a client
// connection, a store's sweep) outlives the tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

func TestRoutes(t *testing.T) {
	store, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mux, err := newMux(limiter.WithStore(store), limiter.WithClock(limitertest.New(time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC))))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()
	tests := []struct {
		name      string
		paths     []string
		wantCodes []int
		wantLimit string
	}{
		{"items_10_per_client", repeat("/api/items", 11), append(repeatCode(200, 10), 429), "10"},
		{"users_one_budget_for_every_id", []string{"/api/users/1", "/api/users/2", "/api/users/3", "/api/users/1", "/api/users/9", "/api/users/4"},
			[]int{200, 200, 200, 200, 200, 429}, "5"},
		{"healthz_never_limited", repeat("/healthz", 20), repeatCode(200, 20), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, p := range tt.paths {
				code, limit := get(t, srv.URL+p)
				if code != tt.wantCodes[i] || limit != tt.wantLimit {
					t.Fatalf("GET %s (call %d): %d with X-RateLimit-Limit %q, want %d and %q", p, i+1, code, limit, tt.wantCodes[i], tt.wantLimit)
				}
			}
		})
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, res.Header.Get("X-RateLimit-Limit")
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func repeatCode(c, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = c
	}
	return out
}
