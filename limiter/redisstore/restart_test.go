package redisstore

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestRestartStartsAfresh pins what a restart of a Redis without
// persistence costs: a key that spent its budget gets a fresh one for
// the rest of the window (one extra window's budget at most, never a
// lockout), and the first decision after the restart reloads the script
// (EVALSHA answered NOSCRIPT, then one EVAL), with no error. It logs that
// decision's latency beside a steady one.
func TestRestartStartsAfresh(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	prefix := testPrefix(t)
	open := func() *Store {
		s, err := New(c, WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	const limit = 5
	p := limiter.MustPolicy("restart", limiter.PerMinute(limit))
	l := newLimiter(t, p, s, limitertest.New(t0.Add(10*time.Second)))
	ctx := context.Background()
	for i := range limit + 1 {
		d, err := l.Allow(ctx, "k", 1)
		if err != nil || d.Allowed != (i < limit) {
			t.Fatalf("call %d before the restart: got %v, %v; want allowed %v", i+1, d.Allowed, err, i < limit)
		}
	}
	steadyStart := time.Now()
	if _, err := l.Peek(ctx, "other", 1); err != nil {
		t.Fatal(err)
	}
	steady := time.Since(steadyStart)

	srv.Restart()
	// A fresh key: the spent one is in this replica's over-limit cache,
	// which a restart elsewhere cannot clear.
	start := time.Now()
	d, err := l.Allow(ctx, "fresh-after-restart", 1)
	first := time.Since(start)
	if err != nil || !d.Allowed {
		t.Fatalf("first decision after the restart: got %v, %v; want admitted", d.Allowed, err)
	}
	if n := commandCalls(t, c, "eval"); n != 1 {
		t.Fatalf("EVAL calls after the restart: got %d, want 1 (the NOSCRIPT reload)", n)
	}
	// Another replica, whose cache never saw the key full, finds its count
	// gone: a whole fresh budget in the same window.
	other := newLimiter(t, p, open(), limitertest.New(t0.Add(20*time.Second)))
	for i := range limit {
		if d, err := other.Allow(ctx, "k", 1); err != nil || !d.Allowed {
			t.Fatalf("call %d after the restart, same window: got %v, %v; want admitted", i+1, d.Allowed, err)
		}
	}
	t.Logf("first decision after the restart (NOSCRIPT, EVAL) took %v; a steady one %v", first.Round(time.Microsecond), steady.Round(time.Microsecond))
}

// TestInFlightRestartWithoutData measures, from outside, what a restart
// of Redis without its data costs a cap of 2 whose slots one replica (A)
// holds: the sorted sets are gone, so another replica (B) is admitted on
// an empty cap until A's next renewals. A renewal is a hold of the slot's
// own token: it takes its slot back when the cap has room, and otherwise
// loses it (Stats.SlotsLost) while its request runs on. Handlers run at
// once, until A's holders finish: 4 (twice the cap) when B filled the cap
// first, 3 when it took one slot, 2 when it took none; Redis holds 2
// slots in every row, and the cap refuses everyone else.
//
// A's lease is a minute, so that no background renewal runs during the
// test: the test sends A's renewals itself, after B's acquires, as the
// renewer would within three eighths of a lease of their last renewal.
func TestInFlightRestartWithoutData(t *testing.T) {
	const capMax = 2
	for _, tc := range []struct {
		name          string
		newAfter      int   // B's requests admitted after the restart, before A's renewals
		renewed, lost int64 // A's renewals that took their slot back, and slots lost
		runningAtOnce int64 // handlers running until A's holders finish
	}{
		{"b_fills_the_cap", 2, 0, 2, 4},
		{"b_takes_one", 1, 1, 1, 3},
		{"b_takes_none", 0, 2, 0, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t)
			prefix := testPrefix(t)
			var running, peak atomic.Int64
			type replica struct {
				s      *Store
				f      *limiter.InFlight
				url    string
				finish chan struct{} // closed to end the replica's handlers
			}
			entered := make(chan struct{}, 2*capMax)
			open := func() *replica {
				r := &replica{finish: make(chan struct{})}
				r.s = newStore(t, redistest.Client(t, srv.Addr()), WithPrefix(prefix))
				r.f = newCap(t, r.s, "exports", capMax, limiter.WithInFlightLease(time.Minute))
				l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(1000)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				mw, err := middleware.New(l, middleware.WithInFlight(r.f, nil))
				if err != nil {
					t.Fatal(err)
				}
				hs := httptest.NewServer(mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
					n := running.Add(1)
					defer running.Add(-1)
					for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
					}
					entered <- struct{}{}
					<-r.finish
				})))
				t.Cleanup(hs.Close)
				r.url = hs.URL
				return r
			}
			a, b := open(), open()
			var wg sync.WaitGroup
			t.Cleanup(func() { // on a failure too: no handler is left waiting
				for _, r := range []*replica{a, b} {
					select {
					case <-r.finish:
					default:
						close(r.finish)
					}
				}
				wg.Wait()
			})
			// send makes n requests to r that the cap admits, each
			// returning once its handler is in.
			send := func(r *replica, n int) {
				t.Helper()
				for range n {
					wg.Go(func() {
						res, err := http.Get(r.url)
						if err != nil {
							t.Error(err)
							return
						}
						res.Body.Close()
						if res.StatusCode != http.StatusOK {
							t.Errorf("an admitted request answered %d", res.StatusCode)
						}
					})
					select {
					case <-entered:
					case <-time.After(10 * time.Second):
						t.Fatal("a request the cap should admit did not reach its handler within 10 s")
					}
				}
			}
			// refused checks that one more request to r is answered 429.
			refused := func(r *replica, when string) {
				t.Helper()
				res, err := http.Get(r.url)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusTooManyRequests {
					t.Fatalf("%s: one more request answered %d, want 429", when, res.StatusCode)
				}
			}
			// slots returns how many slots Redis holds for the test's
			// client, whose key is its address.
			slots := func() int64 {
				t.Helper()
				n, err := redistest.Client(t, srv.Addr()).ZCard(context.Background(), slotKey(prefix, "127.0.0.1", a.f.Policy())).Result()
				if err != nil {
					t.Fatal(err)
				}
				return n
			}

			send(a, capMax)
			refused(b, "before the restart")
			srv.Restart()
			send(b, tc.newAfter)
			a.s.held.renew(time.Now().Add(time.Hour))
			st := a.s.Stats()
			if st.Renewals != uint64(tc.renewed) || st.SlotsLost != uint64(tc.lost) || st.SlotsHeld != int(tc.renewed) {
				t.Fatalf("A's renewals after the restart: stats %+v, want %d taken back, %d lost", st, tc.renewed, tc.lost)
			}
			if n := slots(); n != capMax {
				t.Fatalf("Redis holds %d slots, want %d", n, capMax)
			}
			refused(a, "after A's renewals")
			refused(b, "after A's renewals")
			if n, p := running.Load(), peak.Load(); n != tc.runningAtOnce || p != tc.runningAtOnce {
				t.Fatalf("handlers running at once: %d (peak %d), want %d", n, p, tc.runningAtOnce)
			}
			t.Logf("cap of %d, Redis restarted empty, %d of B's requests admitted before A's renewals: %d renewed, %d lost, %d handlers ran at once",
				capMax, tc.newAfter, st.Renewals, st.SlotsLost, peak.Load())

			// A's holders finish: the lost slots give back nothing, so
			// the cap is exact again, B's holders (and A's taken back)
			// counting.
			close(a.finish)
			if !await(10*time.Second, func() bool { return running.Load() == int64(tc.newAfter) }) {
				t.Fatalf("A's handlers did not end: %d running", running.Load())
			}
			if !await(10*time.Second, func() bool { return slots() == int64(tc.newAfter) }) {
				t.Fatalf("after A's holders finished: Redis holds %d slots, want B's %d", slots(), tc.newAfter)
			}
			if tc.newAfter == capMax {
				refused(a, "after A's holders finished, B holding the cap")
			}
		})
	}
}
