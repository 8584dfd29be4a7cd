package middleware_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func failures(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// login answers 401 to a request with X-Password "wrong", 204 otherwise.
var login = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Password") == "wrong" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
})

// TestCountIfLoginRoute: three failed logins a minute per address, and
// successes free. 10 successes and 3 failures leave the 4th failure
// refused, and the next window fresh.
func TestCountIfLoginRoute(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	l := newLimiter(t, clk, "login", limiter.PerMinute(3))
	rec := &recorder{}
	h := newMiddleware(t, l, middleware.WithCountIf(failures), middleware.WithObserver(rec.observe))(login)
	steps := []struct {
		name, password string
		advance        time.Duration
		wantStatus     int
		wantRemain     string // the header, written before the handler ran
	}{
		{"ok_1", "right", 0, 204, "2"}, {"ok_2", "right", 0, 204, "2"}, {"ok_3", "right", 0, 204, "2"},
		{"fail_1", "wrong", 0, 401, "2"},
		{"ok_4", "right", 0, 204, "1"}, {"ok_5", "right", 0, 204, "1"}, {"ok_6", "right", 0, 204, "1"},
		{"fail_2", "wrong", 0, 401, "1"},
		{"ok_7", "right", 0, 204, "0"}, {"ok_8", "right", 0, 204, "0"},
		{"fail_3", "wrong", 0, 401, "0"},
		// Three failures are spent: the next request is refused before
		// the handler runs, success or not.
		{"ok_9_refused", "right", 0, 429, "0"},
		{"fail_4_refused", "wrong", 0, 429, "0"},
		{"next_window_fresh", "wrong", 50 * time.Second, 401, "2"},
	}
	for _, s := range steps {
		clk.Advance(s.advance)
		w := call(h, "192.0.2.1:1", "X-Password", s.password)
		if w.Code != s.wantStatus {
			t.Fatalf("%s at %v: status %d, want %d", s.name, clk.Now(), w.Code, s.wantStatus)
		}
		wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": s.wantRemain})
	}
	refunds := 0
	for _, e := range rec.events {
		if e.Outcome == middleware.Refunded {
			refunds++
			if e.Err != nil || e.Key != "192.0.2.1" || e.Policy != l.Policy() {
				t.Errorf("refund event %+v, want key 192.0.2.1, policy login, no error", e)
			}
		}
	}
	if refunds != 8 {
		t.Errorf("%d refunds reported, want 8 (the admitted successes)", refunds)
	}
	// After one failure in the new window, 2 remain.
	if d, err := l.Peek(context.Background(), "192.0.2.1", 1); err != nil || d.Remaining != 1 {
		t.Fatalf("peek: %+v, %v; want 1 remaining after one more", d, err)
	}
}

// TestCountIfStatus: the status that decides is the one the handler wrote.
func TestCountIfStatus(t *testing.T) {
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantStatus  int
		wantCharged bool
	}{
		{"write_header_401", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(401) }, 401, true},
		{"write_header_403_then_body", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(403)
			_, _ = io.WriteString(w, "no")
		}, 403, true},
		{"body_without_write_header_is_200", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "hi") }, 200, false},
		{"nothing_written_is_200", func(http.ResponseWriter, *http.Request) {}, 200, false},
		{"early_hints_then_401", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(401)
		}, http.StatusEarlyHints, true}, // the recorder keeps the 103; a server sends 401 after it
		{"second_write_header_ignored", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(200)
			w.WriteHeader(401) // superfluous: the client got 200
		}, 200, false},
		{"read_from_is_200", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.(io.ReaderFrom).ReadFrom(strings.NewReader("body"))
		}, 200, false},
		{"flush_commits_200", func(w http.ResponseWriter, _ *http.Request) {
			w.(http.Flusher).Flush()
			w.WriteHeader(401)
		}, 200, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(5))
			h := newMiddleware(t, l, middleware.WithCountIf(failures))(tt.handler)
			w := call(h, "192.0.2.1:1")
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d", w.Code, tt.wantStatus)
			}
			wantRemaining(t, l, "192.0.2.1", map[bool]int64{true: 4, false: 5}[tt.wantCharged])
		})
	}
}

// wantRemaining checks what key has left, by a peek that charges nothing
// (a peek at cost 1 reports what would be left after one more).
func wantRemaining(t *testing.T, l *limiter.Limiter, key string, want int64) {
	t.Helper()
	d, err := l.Peek(context.Background(), key, 1)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Remaining + 1; got != want {
		t.Fatalf("%s has %d left, want %d", key, got, want)
	}
}

// A handler that panics stays charged.
func TestCountIfPanicStaysCharged(t *testing.T) {
	l := newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(5))
	h := newMiddleware(t, l, middleware.WithCountIf(failures))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(200)
		panic(http.ErrAbortHandler)
	}))
	func() {
		defer func() { _ = recover() }()
		call(h, "192.0.2.1:1")
	}()
	wantRemaining(t, l, "192.0.2.1", 4)
}

// Every limiter of the middleware that charged is refunded, every window
// of a layered policy.
func TestCountIfRefundsEveryLimiter(t *testing.T) {
	clk := newFakeClock(t0)
	perIP := newLimiter(t, clk, "per-ip", limiter.PerMinute(10), limiter.PerSecond(2))
	perUser := newLimiter(t, clk, "per-user", limiter.PerMinute(3))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	h := newMiddleware(t, perIP, middleware.WithLimiter(perUser, user), middleware.WithCountIf(failures))(login)
	for range 5 {
		if w := call(h, "192.0.2.1:1", "X-User", "ann"); w.Code != 204 {
			t.Fatalf("status %d, want 204: refunded successes never spend the budget", w.Code)
		}
	}
	call(h, "192.0.2.1:1", "X-User", "ann", "X-Password", "wrong")
	d, err := perIP.Peek(context.Background(), "192.0.2.1", 1)
	if err != nil {
		t.Fatal(err)
	}
	ws := []limiter.WindowStatus{d.WindowAt(0), d.WindowAt(1)}
	if ws[0].Remaining != 8 || ws[1].Remaining != 0 {
		t.Fatalf("per-ip windows after one failure: %+v, want 9 and 1 left (peek: 8 and 0)", ws)
	}
	wantRemaining(t, perUser, "hdr:X-User:ann", 2)
}

// A refund never lends budget to a later window: a request charged at
// 12:00:59.9 and answered at 12:01:00.1 refunds nothing.
func TestCountIfRefundAcrossTheBoundary(t *testing.T) {
	clk := newFakeClock(t0.Add(59*time.Second + 900*time.Millisecond))
	l := newLimiter(t, clk, "api", limiter.PerMinute(5))
	slow := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		clk.Advance(200 * time.Millisecond)
		w.WriteHeader(200)
	})
	h := newMiddleware(t, l, middleware.WithCountIf(failures))(slow)
	call(h, "192.0.2.1:1")
	wantRemaining(t, l, "192.0.2.1", 5) // the new window is whole, not 6
}

func TestCountIfOptionErrors(t *testing.T) {
	p := limiter.MustPolicy("custom", limiter.PerMinute(5))
	real := newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(5))
	tests := []struct {
		name string
		l    middleware.Limiter
		opts []middleware.Option
	}{
		{"nil_count", real, []middleware.Option{middleware.WithCountIf(nil)}},
		{"limiter_without_refund", &stubLimiter{policy: p}, []middleware.Option{middleware.WithCountIf(failures)}},
		{"second_limiter_without_refund", real, []middleware.Option{
			middleware.WithLimiter(&stubLimiter{policy: p}, mustRemoteHost(t)), middleware.WithCountIf(failures)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := middleware.New(tt.l, tt.opts...); !errors.Is(err, middleware.ErrInvalidOption) || !strings.Contains(err.Error(), "WithCountIf") {
				t.Fatalf("New: error %v, want one wrapping ErrInvalidOption naming WithCountIf", err)
			}
		})
	}
}

// The ResponseWriter the handler gets keeps the server's: Flush and
// Hijack by assertion and through http.ResponseController, deadlines by
// Unwrap.
func TestCountIfKeepsTheResponseWriter(t *testing.T) {
	l := newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(100))
	mw := newMiddleware(t, l, middleware.WithCountIf(failures))
	tests := []struct {
		name        string
		handler     http.HandlerFunc
		wantCharged int64
	}{
		{"flusher_assertion", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(401)
			w.(http.Flusher).Flush()
		}, 1},
		{"controller_flush_and_deadline", func(w http.ResponseWriter, _ *http.Request) {
			rc := http.NewResponseController(w)
			if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			if err := rc.Flush(); err != nil {
				http.Error(w, err.Error(), 500)
			}
		}, 0},
		{"hijack_stays_charged", func(w http.ResponseWriter, _ *http.Request) {
			c, brw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			defer c.Close()
			_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			_ = brw.Flush()
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(mw(tt.handler))
			defer srv.Close()
			before, err := l.Peek(context.Background(), "127.0.0.1", 1)
			if err != nil {
				t.Fatal(err)
			}
			res, err := srv.Client().Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, bufio.NewReader(res.Body))
			res.Body.Close()
			if res.StatusCode == 500 {
				t.Fatalf("handler failed: status 500")
			}
			srv.Close() // the handler has returned, and refunded
			after, err := l.Peek(context.Background(), "127.0.0.1", 1)
			if err != nil {
				t.Fatal(err)
			}
			if got := before.Remaining - after.Remaining; got != tt.wantCharged {
				t.Fatalf("charged %d, want %d", got, tt.wantCharged)
			}
		})
	}
}

// TestCountIfCalendarDay: three failed logins a day in the customer's
// zone (Kathmandu, +5:45), successes refunded; the day ends at the local
// midnight, which the refusals' X-RateLimit-Reset names.
func TestCountIfCalendarDay(t *testing.T) {
	kathmandu, err := time.LoadLocation("Asia/Kathmandu")
	if err != nil {
		t.Fatal(err)
	}
	mid := time.Date(2026, 5, 4, 0, 0, 0, 0, kathmandu)
	clk := newFakeClock(mid.Add(-time.Hour))
	l := newLimiter(t, clk, "login", limiter.PerDayIn(3, kathmandu))
	h := newMiddleware(t, l, middleware.WithCountIf(failures))(login)
	steps := []struct {
		name, password string
		at             time.Duration // from midnight
		wantStatus     int
	}{
		{"ok_refunded", "right", -time.Hour, 204},
		{"fail_1", "wrong", -time.Hour, 401},
		{"fail_2", "wrong", -time.Minute, 401},
		{"ok_refunded_again", "right", -time.Minute, 204},
		{"fail_3", "wrong", -time.Second, 401},
		{"refused_before_midnight", "right", -time.Millisecond, 429}, // X-RateLimit-Reset: midnight
		{"new_day", "wrong", 0, 401},
		{"new_day_ok", "right", time.Hour, 204},
		{"new_day_fail_2", "wrong", time.Hour, 401},
		{"new_day_fail_3", "wrong", 23 * time.Hour, 401},
		{"refused_until_the_next_midnight", "right", 24*time.Hour - time.Millisecond, 429}, // reset: the next
	}
	for _, s := range steps {
		clk.Set(mid.Add(s.at))
		w := call(h, "192.0.2.1:1", "X-Password", s.password)
		if w.Code != s.wantStatus {
			t.Fatalf("%s at %v: status %d, want %d", s.name, clk.Now(), w.Code, s.wantStatus)
		}
		if w.Code == http.StatusTooManyRequests {
			reset := mid // the local midnight that ends the day of s.at
			if s.at >= 0 {
				reset = time.Date(2026, 5, 5, 0, 0, 0, 0, kathmandu)
			}
			wantHeaders(t, w, map[string]string{"X-RateLimit-Reset": strconv.FormatInt(reset.Unix(), 10)})
		}
	}
}
