package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// t0 is 12:00:00 UTC, the start of a minute, an hour and a second.
var t0 = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// newLimiter returns a limiter on its own memory store, reading clk.
func newLimiter(t *testing.T, clk limiter.Clock, name string, rates ...limiter.Rate) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limiter.MustPolicy(name, rates...), limiter.WithClock(clk))
	if err != nil {
		t.Fatalf("limiter.New(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// newMiddleware calls middleware.New and fails the test on error.
func newMiddleware(t *testing.T, l middleware.Limiter, opts ...middleware.Option) func(http.Handler) http.Handler {
	t.Helper()
	mw, err := middleware.New(l, opts...)
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return mw
}

// okHandler counts its calls and answers 200 "ok".
type okHandler struct {
	mu    sync.Mutex
	calls int
}

func (h *okHandler) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	h.calls++
	h.mu.Unlock()
	_, _ = w.Write([]byte("ok"))
}

func (h *okHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

// call sends one GET from remoteAddr through h.
func call(h http.Handler, remoteAddr string, hdr ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/x", nil)
	r.RemoteAddr = remoteAddr
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// stubLimiter answers every call with d and err, and records the calls.
type stubLimiter struct {
	policy *limiter.Policy
	d      limiter.Decision
	err    error

	mu    sync.Mutex
	keys  []string
	costs []int64
}

func (s *stubLimiter) Allow(_ context.Context, key string, cost int64) (limiter.Decision, error) {
	s.mu.Lock()
	s.keys = append(s.keys, key)
	s.costs = append(s.costs, cost)
	s.mu.Unlock()
	return s.d, s.err
}

func (s *stubLimiter) Policy() *limiter.Policy { return s.policy }

func (s *stubLimiter) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys)
}

// recorder is an observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []middleware.Event
}

func (r *recorder) observe(e middleware.Event) {
	r.mu.Lock()
	e.Request = nil
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func (r *recorder) outcomes() []middleware.Outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]middleware.Outcome, len(r.events))
	for i, e := range r.events {
		out[i] = e.Outcome
	}
	return out
}

// wantHeaders checks the rate-limit headers of a response; an empty want
// value means the header must be absent.
func wantHeaders(t *testing.T, w *httptest.ResponseRecorder, want map[string]string) {
	t.Helper()
	for name, v := range want {
		got, ok := w.Header()[http.CanonicalHeaderKey(name)]
		switch {
		case v == "" && ok:
			t.Errorf("header %s = %q, want it absent", name, got)
		case v != "" && (len(got) != 1 || got[0] != v):
			t.Errorf("header %s = %q, want [%q]", name, got, v)
		}
	}
}

func newFakeClock(t time.Time) *limitertest.Clock { return limitertest.New(t) }
