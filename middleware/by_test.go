package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func TestOneLinePanicsOnBadArguments(t *testing.T) {
	tests := []struct {
		name     string
		build    func()
		wantIs   error
		wantText string
	}{
		{"ip_zero_limit", func() { middleware.ByIP(0, time.Minute) }, limiter.ErrInvalidPolicy, "middleware: ByIP: "},
		{"ip_negative_limit", func() { middleware.ByIP(-1, time.Minute) }, limiter.ErrInvalidPolicy, "middleware: ByIP: "},
		{"ip_sub_millisecond_window", func() { middleware.ByIP(1, time.Microsecond) }, limiter.ErrInvalidPolicy, "middleware: ByIP: "},
		{"ip_zero_window", func() { middleware.ByIP(1, 0) }, limiter.ErrInvalidPolicy, "middleware: ByIP: "},
		{"header_bad_name", func() { middleware.ByHeader("X API Key", 1, time.Minute) }, keyfunc.ErrInvalidOption, "middleware: ByHeader: "},
		{"header_empty_name", func() { middleware.ByHeader("", 1, time.Minute) }, keyfunc.ErrInvalidOption, "middleware: ByHeader: "},
		{"header_zero_limit", func() { middleware.ByHeader("X-API-Key", 0, time.Minute) }, limiter.ErrInvalidPolicy, "middleware: ByHeader: "},
		{"principal_nil_accessor", func() { middleware.ByPrincipal(nil, 1, time.Minute) }, keyfunc.ErrInvalidOption, "middleware: ByPrincipal: "},
		{"principal_bad_window", func() { middleware.ByPrincipal(userID, 1, 1500*time.Microsecond) }, limiter.ErrInvalidPolicy, "middleware: ByPrincipal: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				v := recover()
				err, ok := v.(error)
				if !ok {
					t.Fatalf("got panic value %#v, want an error", v)
				}
				if !errors.Is(err, tt.wantIs) || !strings.HasPrefix(err.Error(), tt.wantText) {
					t.Fatalf("got panic %q, want one starting %q and wrapping %v", err, tt.wantText, tt.wantIs)
				}
			}()
			tt.build()
		})
	}
}

// TestOneLineLimitsPerWindow checks that the limit means what it says:
// exactly limit admissions per client, whatever the form.
func TestOneLineLimitsPerWindow(t *testing.T) {
	const limit = 100
	tests := []struct {
		name string
		mw   func(http.Handler) http.Handler
		hdr  []string
	}{
		{"by_ip", middleware.ByIP(limit, time.Hour), nil},
		{"by_header", middleware.ByHeader("X-API-Key", limit, time.Hour), []string{"X-API-Key", "k-1"}},
		{"by_principal_anonymous", middleware.ByPrincipal(userID, limit, time.Hour), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			next := &okHandler{}
			h := tt.mw(next)
			codes := map[int]int{}
			for range limit + 5 {
				codes[call(h, "192.0.2.1:1", tt.hdr...).Code]++
			}
			// An hour's window: only a run that straddles the turn of an
			// hour can see more, so allow that one case.
			if codes[http.StatusOK] != limit && codes[http.StatusOK] != limit+5 {
				t.Fatalf("%d requests: got %v, want %d of 200 and the rest 429", limit+5, codes, limit)
			}
			if next.count() != codes[http.StatusOK] {
				t.Fatalf("handler called %d times for %d admissions", next.count(), codes[http.StatusOK])
			}
		})
	}
}

// TestOneLineStartsNoGoroutine checks how the one-line forms release what
// they hold: they start no goroutine, so dropping the middleware leaves
// nothing running, and the garbage collector frees the rest.
func TestOneLineStartsNoGoroutine(t *testing.T) {
	defer leakcheck.VerifyNone(t, leakcheck.IgnoreCurrent())
	before := runtime.NumGoroutine()
	for range 50 {
		h := middleware.ByIP(10, time.Minute)(&okHandler{})
		call(h, "192.0.2.1:1")
		h = middleware.ByHeader("X-API-Key", 10, time.Minute)(&okHandler{})
		call(h, "192.0.2.1:1", "X-API-Key", "k")
		h = middleware.ByPrincipal(userID, 10, time.Minute)(&okHandler{})
		call(h, "192.0.2.1:1")
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Fatalf("goroutines: %d before building 150 one-line middlewares, %d after", before, after)
	}
}

// TestOneLineOnATestClock: the one-line forms take the limiter's options,
// so a test crosses a window by moving a limitertest.Clock, never by
// sleeping.
func TestOneLineOnATestClock(t *testing.T) {
	ann := func(r *http.Request) *http.Request {
		return r.WithContext(context.WithValue(r.Context(), userKey{}, "ann"))
	}
	tests := []struct {
		name string
		mw   func(clk limiter.Clock) func(http.Handler) http.Handler
		hdr  []string
		as   func(*http.Request) *http.Request
	}{
		{"by_ip", func(clk limiter.Clock) func(http.Handler) http.Handler {
			return middleware.ByIP(2, time.Minute, limiter.WithClock(clk))
		}, nil, nil},
		{"by_header", func(clk limiter.Clock) func(http.Handler) http.Handler {
			return middleware.ByHeader("X-API-Key", 2, time.Minute, limiter.WithClock(clk))
		}, []string{"X-API-Key", "k-1"}, nil},
		{"by_principal_signed_in", func(clk limiter.Clock) func(http.Handler) http.Handler {
			return middleware.ByPrincipal(userID, 2, time.Minute, limiter.WithClock(clk))
		}, nil, ann},
		{"by_principal_anonymous", func(clk limiter.Clock) func(http.Handler) http.Handler {
			return middleware.ByPrincipal(userID, 2, time.Minute, limiter.WithClock(clk))
		}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newFakeClock(t0.Add(45 * time.Second))
			h := tt.mw(clk)(&okHandler{})
			send := func() *httptest.ResponseRecorder {
				r := httptest.NewRequest(http.MethodGet, "/x", nil)
				r.RemoteAddr = "192.0.2.1:1"
				for i := 0; i+1 < len(tt.hdr); i += 2 {
					r.Header.Set(tt.hdr[i], tt.hdr[i+1])
				}
				if tt.as != nil {
					r = tt.as(r)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				return w
			}
			steps := []struct {
				name       string
				advance    time.Duration
				wantStatus int
				wantRemain string
				wantRetry  string
			}{
				{"first", 0, 200, "1", ""},
				{"second", 0, 200, "0", ""},
				{"third_refused_until_the_minute_ends", 0, 429, "0", "15"},
				{"still_refused_at_12_00_59_999", 14*time.Second + 999*time.Millisecond, 429, "0", "1"},
				{"next_window_fresh", time.Millisecond, 200, "1", ""},
			}
			for _, s := range steps {
				clk.Advance(s.advance)
				w := send()
				if w.Code != s.wantStatus {
					t.Fatalf("%s at %v: status %d, want %d", s.name, clk.Now(), w.Code, s.wantStatus)
				}
				wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": s.wantRemain, "Retry-After": s.wantRetry})
			}
		})
	}
}

func TestOneLineNilLimiterOptionPanics(t *testing.T) {
	defer func() {
		err, ok := recover().(error)
		if !ok || !errors.Is(err, limiter.ErrInvalidOption) || !strings.HasPrefix(err.Error(), "middleware: ByIP: ") {
			t.Fatalf("got panic %v, want an error starting %q and wrapping limiter.ErrInvalidOption", err, "middleware: ByIP: ")
		}
	}()
	middleware.ByIP(1, time.Minute, nil)
}
