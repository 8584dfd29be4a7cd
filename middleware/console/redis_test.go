package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// redisStore returns a store on c under a prefix no other test uses,
// bounded by timeout, closed when the test ends.
func redisStore(t *testing.T, c redis.UniversalClient, timeout time.Duration) *redisstore.Store {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	s, err := redisstore.New(c, redisstore.WithPrefix("test:console:"+hex.EncodeToString(b[:])+":"), redisstore.WithTimeout(timeout))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestOnRedis: on the Redis store (the shared one at 127.0.0.1:6379,
// which the test needs: it fails without it) the console shows a key's
// windows and slots, resets it and refunds it, as on the memory store.
func TestOnRedis(t *testing.T) {
	fx := newFixture(t, redisStore(t, redistest.Shared(t), 5*time.Second), nil)
	fx.spend(t, "acme", 5)
	_, release, err := fx.export.Acquire(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var u usageJSON
	decode(t, fx.get("/admin/limits/usage?key=acme"), &u)
	if u.Failed || u.Limiters[0].Windows[0].Used != 5 || u.Limiters[0].Windows[1].Used != 5 || u.Caps[0].Held != 1 {
		t.Fatalf("usage on Redis %+v", u)
	}
	token := fx.token(t)
	w := fx.postForm("/admin/limits/reset", url.Values{"key": {"acme"}, "reason": {"r"}, "csrf_token": {token}, "confirm": {"reset"}})
	if w.Code != http.StatusSeeOther {
		t.Fatalf("reset: %d %s", w.Code, w.Body.String())
	}
	// The fresh budget's charges come after the Reset's instant: a
	// return reaches only charges decided after it (issue 36).
	fx.clk.Advance(time.Millisecond)
	fx.spend(t, "acme", 4)
	w = fx.postForm("/admin/limits/refund", url.Values{"key": {"acme"}, "reason": {"r"}, "policy": {"api"}, "amount": {"3"}, "csrf_token": {token}})
	if w.Code != http.StatusSeeOther || fx.used(t, "acme") != 1 {
		t.Fatalf("refund of 3 of 4: %d %s, used %d; want 1 used", w.Code, w.Body.String(), fx.used(t, "acme"))
	}
	w = fx.postForm("/admin/limits/refund", url.Values{"key": {"acme"}, "reason": {"r"}, "policy": {"api"}, "amount": {"2"}, "csrf_token": {token}})
	if w.Code != http.StatusConflict || fx.used(t, "acme") != 1 {
		t.Fatalf("refund of 2 of 1: %d, used %d; want 409, 1 used", w.Code, fx.used(t, "acme"))
	}
}

// TestStoreUnreachable: a Redis that refuses connections, or that does
// not answer, makes the page and the JSON say so, naming the node where
// the store's error does, within about the store's timeout: the limiter
// and the cap are read at once, not one after the other.
func TestStoreUnreachable(t *testing.T) {
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name string
		addr func(t *testing.T) string
		want string
	}{
		{"refused", func(t *testing.T) string {
			srv := redistest.StartServer(t)
			srv.Kill()
			return srv.Addr()
		}, "connection refused"},
		{"silent", func(t *testing.T) string {
			p := redistest.StartProxy(t, redistest.SharedAddr)
			p.SetDelay(5 * timeout)
			return p.Addr()
		}, "timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := tc.addr(t)
			c := redistest.Client(t, addr)
			fx := newFixture(t, redisStore(t, c, timeout), nil)
			start := time.Now()
			w := fx.get("/admin/limits/?key=acme")
			took := time.Since(start)
			body := w.Body.String()
			if w.Code != http.StatusServiceUnavailable || !strings.Contains(body, "could not be read") || !strings.Contains(body, tc.want) {
				t.Fatalf("status %d; want 503 saying %q:\n%s", w.Code, tc.want, body)
			}
			if tc.name == "refused" && !strings.Contains(body, addr) {
				t.Errorf("the page does not name the node %s:\n%s", addr, body)
			}
			if took > 2*timeout+time.Second {
				t.Errorf("the page took %v, the store's timeout is %v", took, timeout)
			}
			var u usageJSON
			decode(t, fx.get("/admin/limits/usage?key=acme"), &u)
			t.Logf("limiter: %s\ncap: %s", u.Limiters[0].Error, u.Caps[0].Error)
			if !u.Failed || !strings.Contains(u.Limiters[0].Error, tc.want) || !strings.Contains(u.Caps[0].Error, tc.want) {
				t.Fatalf("usage %+v", u)
			}
			ev := fx.takeEvents()
			if len(ev) != 2 || ev[0].Err == nil {
				t.Fatalf("events %+v, want two lookups that failed", ev)
			}
		})
	}
}
