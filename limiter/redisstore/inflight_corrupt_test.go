package redisstore

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestInFlightForeignValueRefused: a value of another type under a cap's
// slot key refuses every request of that key, and that key alone, as a
// full cap does: Remaining 0 in the decision and X-RateLimit-Remaining: 0
// in the headers (inflight.lua's "0 held" beside the refusal once made
// them say 3 of 3). Each refusal is reported to the observer as a corrupt
// value naming the key, as a corrupt count is, and the value is left as
// it is.
func TestInFlightForeignValueRefused(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		write func(key string) error
	}{
		{"string", func(k string) error { return c.Set(ctx, k, "abc", 0).Err() }},
		{"hash", func(k string) error { return c.HSet(ctx, k, "x", 1).Err() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				events []Event
			)
			s := newStore(t, c, WithObserver(func(e Event) {
				mu.Lock()
				defer mu.Unlock()
				if e.Kind != RiskyMemoryPolicy { // the shared Redis's settings are not this test's
					events = append(events, e)
				}
			}))
			f := newCap(t, s, "exports", 3)
			const client = "192.0.2.1"
			key := slotKey(s.cfg.prefix, client, f.Policy())
			if err := tc.write(key); err != nil {
				t.Fatal(err)
			}
			before, _ := c.Dump(ctx, key).Result()
			// wantEvents checks that the observer got a CorruptValue per
			// key of keys, naming it, and nothing else.
			wantEvents := func(keys ...string) {
				t.Helper()
				mu.Lock()
				defer mu.Unlock()
				if len(events) != len(keys) {
					t.Fatalf("observer got %d events %v, want %d", len(events), events, len(keys))
				}
				for i, e := range events {
					if e.Kind != CorruptValue || !errors.Is(e.Err, ErrCorruptValue) || !strings.Contains(e.Err.Error(), strconv.Quote(keys[i])) {
						t.Fatalf("event %d: %+v (%v), want a CorruptValue naming %q", i, e, e.Err, keys[i])
					}
				}
			}

			d, release := take(t, f, client)
			if d.Allowed || release != nil || d.Limit != 3 || d.Remaining != 0 {
				t.Fatalf("a foreign value under the slot key: got allowed %v limit %d remaining %d, want refused, limit 3, remaining 0",
					d.Allowed, d.Limit, d.Remaining)
			}
			wantEvents(key)
			if d, release := take(t, f, "192.0.2.2"); !d.Allowed || d.Remaining != 2 {
				t.Fatalf("a sound key beside it: %+v, want admitted with 2 left", d)
			} else {
				release()
			}
			wantEvents(key)
			if u, err := f.Usage(ctx, client); err != nil || u.Held != 3 {
				t.Fatalf("Usage of the key with a foreign value: %+v, %v; want the cap, 3, as full", u, err)
			}
			wantEvents(key, key)
			mu.Lock()
			events = events[:1]
			mu.Unlock()

			l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(1000)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			mw, err := middleware.New(l, middleware.WithInFlight(f, nil))
			if err != nil {
				t.Fatal(err)
			}
			h := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
				t.Error("the handler ran for a key with a foreign value under its slots")
			}))
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.RemoteAddr = client + ":1234"
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Remaining") != "0" || w.Header().Get("X-RateLimit-Limit") != "3" {
				t.Fatalf("middleware: got %d, X-RateLimit-Remaining %q of X-RateLimit-Limit %q; want 429, 0 of 3",
					w.Code, w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("X-RateLimit-Limit"))
			}
			wantEvents(key, key)

			if after, _ := c.Dump(ctx, key).Result(); after != before {
				t.Fatal("a refusal rewrote the foreign value")
			}

			// A foreign value that replaces the slots of a held one: its
			// next renewal loses it, and reports the value.
			const holder = "192.0.2.3"
			d, release = take(t, f, holder)
			if !d.Allowed {
				t.Fatalf("%s: %+v, want a slot", holder, d)
			}
			hkey := slotKey(s.cfg.prefix, holder, f.Policy())
			if err := c.Del(ctx, hkey).Err(); err != nil {
				t.Fatal(err)
			}
			if err := tc.write(hkey); err != nil {
				t.Fatal(err)
			}
			s.held.renew(time.Now().Add(time.Hour))
			if st := s.Stats(); st.SlotsHeld != 0 || st.SlotsLost != 1 {
				t.Fatalf("after a renewal found a foreign value: stats %+v, want the slot lost, none held", st)
			}
			wantEvents(key, key, hkey)
			release() // the store holds nothing to give back
			wantEvents(key, key, hkey)
		})
	}
}
