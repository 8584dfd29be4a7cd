package refund

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// login answers 401 to a request with X-Password "wrong", 204 otherwise.
var login = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Password") == "wrong" {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	w.WriteHeader(http.StatusNoContent)
})

// TestLoginAcrossReplicas: three failed logins a minute per address over
// two replicas sharing one Redis, successes refunded: 10 successes and 3
// failures, alternating replicas, leave the 4th failure refused on
// either replica, and the next window fresh. Under both clocks (the
// fake clock moves the limiter's windows; WithServerClock's are Redis's,
// so that row checks the refusal and not the next window).
func TestLoginAcrossReplicas(t *testing.T) {
	for _, server := range []bool{false, true} {
		name := map[bool]string{false: "app", true: "server"}[server]
		t.Run(name, func(t *testing.T) {
			var b [6]byte
			_, _ = rand.Read(b[:])
			prefix := "test:refund:" + hex.EncodeToString(b[:]) + ":"
			clk := limitertest.New(time.Date(2026, 7, 31, 12, 0, 10, 0, time.UTC))
			p := limiter.MustPolicy("login", limiter.PerMinute(3))
			var replicas []http.Handler
			for range 2 {
				opts := []redisstore.Option{redisstore.WithPrefix(prefix)}
				if server {
					opts = append(opts, redisstore.WithServerClock())
				}
				s, err := redisstore.New(redistest.Shared(t), opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				mw, err := middleware.New(l, middleware.WithCountIf(func(s int) bool { return s == 401 || s == 403 }))
				if err != nil {
					t.Fatal(err)
				}
				replicas = append(replicas, mw(login))
			}
			if server {
				awaitMinute(t)
			}
			call := func(i int, password string) int {
				r := httptest.NewRequest(http.MethodPost, "/login", nil)
				r.RemoteAddr = "192.0.2.1:1"
				r.Header.Set("X-Password", password)
				w := httptest.NewRecorder()
				replicas[i%2].ServeHTTP(w, r)
				return w.Code
			}
			steps := []struct {
				password string
				want     int
			}{
				{"right", 204}, {"right", 204}, {"right", 204}, {"wrong", 401},
				{"right", 204}, {"right", 204}, {"right", 204}, {"wrong", 401},
				{"right", 204}, {"right", 204}, {"right", 204}, {"right", 204}, {"wrong", 401},
				{"wrong", 429}, {"right", 429},
			}
			for i, st := range steps {
				if got := call(i, st.password); got != st.want {
					t.Fatalf("step %d (%s, replica %d): status %d, want %d", i, st.password, i%2, got, st.want)
				}
			}
			if !server {
				clk.Advance(time.Minute)
				if got := call(0, "wrong"); got != 401 {
					t.Fatalf("the next window: status %d, want 401 (a fresh budget)", got)
				}
			}
		})
	}
}

// awaitMinute waits, if less than 2 s are left of Redis's minute, for the
// next, so that a WithServerClock row stays in one window.
func awaitMinute(t *testing.T) {
	t.Helper()
	now, err := redistest.Shared(t).Time(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Minute - time.Duration(now.UnixMilli()%60000)*time.Millisecond; left < 2*time.Second {
		time.Sleep(left + 10*time.Millisecond)
	}
}
