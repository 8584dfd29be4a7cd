package middleware_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/captest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// newInFlight returns a cap of max on a memory store of its own, dated by
// clk, closed when the test ends.
func newInFlight(t *testing.T, clk limiter.Clock, name string, max int64) *limiter.InFlight {
	t.Helper()
	f, err := limiter.NewInFlight(name, max, limiter.WithClock(clk))
	if err != nil {
		t.Fatalf("limiter.NewInFlight(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f
}

// slotsLeft returns how many slots key could still take of f: it takes
// them all and gives them back.
func slotsLeft(t *testing.T, f *limiter.InFlight, key string) int64 {
	t.Helper()
	var n int64
	for {
		d, release, err := f.Acquire(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed {
			return n
		}
		defer release()
		n++
	}
}

// releases is an observer that passes on every Released event, so that
// a test waits for a slot to go back rather than for a while.
type releases struct {
	recorder
	ch chan middleware.Event
}

func newReleases() *releases { return &releases{ch: make(chan middleware.Event, 64)} }

func (r *releases) observe(e middleware.Event) {
	r.recorder.observe(e)
	if e.Outcome == middleware.Released {
		r.ch <- e
	}
}

// await waits for the next Released event, for at most 10 s.
func (r *releases) await(t *testing.T) middleware.Event {
	t.Helper()
	select {
	case e := <-r.ch:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no slot released within 10 s")
		return middleware.Event{}
	}
}

// Exactly max handlers run at once under 64 concurrent clients, over a
// real loopback listener.
func TestInFlightExactlyMaxUnder64Clients(t *testing.T) {
	const max = 5
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(1_000_000))
	f := newInFlight(t, clk, "exports", max)
	g := captest.NewGate(max)
	srv := httptest.NewServer(newMiddleware(t, l, middleware.WithInFlight(f, nil))(g))
	defer srv.Close()
	counts := captest.Hammer(t, g, []string{srv.URL}, 64, 10)
	captest.Check(t, g, max, counts)
	srv.Close() // every handler has returned
	if n := slotsLeft(t, f, "127.0.0.1"); n != max {
		t.Fatalf("%d slots left after the run, want all %d back", n, max)
	}
}

// Every way out of the handler gives the slot back, once.
func TestInFlightReleasedOnEveryExit(t *testing.T) {
	const key = "127.0.0.1"
	for _, c := range []struct {
		name    string
		handler func(entered chan<- struct{}) http.HandlerFunc
		client  func(t *testing.T, url string, entered <-chan struct{})
	}{
		{"return", func(entered chan<- struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) { entered <- struct{}{}; w.WriteHeader(204) }
		}, getOnce},
		{"panic", func(entered chan<- struct{}) http.HandlerFunc {
			return func(http.ResponseWriter, *http.Request) { entered <- struct{}{}; panic(http.ErrAbortHandler) }
		}, func(t *testing.T, url string, entered <-chan struct{}) {
			if _, err := http.Get(url); err == nil {
				t.Error("a handler that panics answered")
			}
		}},
		{"client_disconnects", func(entered chan<- struct{}) http.HandlerFunc {
			return func(_ http.ResponseWriter, r *http.Request) { entered <- struct{}{}; <-r.Context().Done() }
		}, func(t *testing.T, url string, entered <-chan struct{}) {
			conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			_, _ = conn.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
			<-entered
			conn.Close() // the client leaves mid-request
		}},
		{"hijacked", func(entered chan<- struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				entered <- struct{}{}
				c, brw, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				defer c.Close()
				_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
				_ = brw.Flush()
			}
		}, getOnce},
		{"streamed", func(entered chan<- struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, _ *http.Request) {
				entered <- struct{}{}
				for range 3 {
					_, _ = w.Write([]byte("chunk\n"))
					_ = http.NewResponseController(w).Flush()
				}
			}
		}, getOnce},
	} {
		t.Run(c.name, func(t *testing.T) {
			clk := newFakeClock(t0)
			l := newLimiter(t, clk, "api", limiter.PerMinute(100))
			f := newInFlight(t, clk, "exports", 1)
			obs := newReleases()
			entered := make(chan struct{}, 1)
			inner := c.handler(entered)
			check := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n := slotsLeft(t, f, key); n != 0 { // inside: the slot is held
					t.Errorf("inside the handler: %d slots left, want 0", n)
				}
				inner(w, r)
			})
			srv := httptest.NewUnstartedServer(newMiddleware(t, l, middleware.WithInFlight(f, nil), middleware.WithObserver(obs.observe))(check))
			srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the panic's trace
			srv.Start()
			defer srv.Close()
			c.client(t, srv.URL, entered)
			e := obs.await(t)
			if e.Key != key || e.Policy != f.Policy() || !e.Decision.Allowed {
				t.Errorf("Released event %+v, want the cap's for %s", e, key)
			}
			if n := slotsLeft(t, f, key); n != 1 {
				t.Fatalf("after the handler's exit: %d slots left, want 1", n)
			}
			srv.Close()
			if got := countOf(obs.outcomes(), middleware.Released); got != 1 {
				t.Fatalf("%d Released events, want 1: %v", got, obs.outcomes())
			}
		})
	}
}

// getOnce sends one GET and reads the answer.
func getOnce(t *testing.T, url string, _ <-chan struct{}) {
	res, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, bufio.NewReader(res.Body))
	res.Body.Close()
}

func countOf(outcomes []middleware.Outcome, o middleware.Outcome) int {
	n := 0
	for _, x := range outcomes {
		if x == o {
			n++
		}
	}
	return n
}

// holdOne sends one request through h from addr on a goroutine and
// returns once its handler runs; calling the func it returns lets the
// handler finish and waits for the answer.
func holdOne(t *testing.T, mw func(http.Handler) http.Handler, addr string) (finish func() *httptest.ResponseRecorder) {
	t.Helper()
	in, out := make(chan struct{}), make(chan struct{})
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(in)
		<-out
	}))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- call(h, addr) }()
	select {
	case <-in:
	case w := <-done:
		t.Fatalf("the first request was answered %d without running", w.Code)
	}
	return func() *httptest.ResponseRecorder { close(out); return <-done }
}

// A request the cap refuses leaves every rate as it was: each window of
// each limiter, refunded.
func TestInFlightRefusalChargesNoRate(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	perIP := newLimiter(t, clk, "per-ip", limiter.PerMinute(10), limiter.PerSecond(5))
	perUser := newLimiter(t, clk, "per-user", limiter.PerMinute(20))
	f := newInFlight(t, clk, "exports", 1)
	obs := &recorder{}
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	mw := newMiddleware(t, perIP, middleware.WithLimiter(perUser, user), middleware.WithInFlight(f, user),
		middleware.WithObserver(obs.observe), middleware.WithHeaders(hw))
	h := mw(&okHandler{})
	in, out := make(chan struct{}), make(chan struct{})
	holding := mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { close(in); <-out }))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- call(holding, "192.0.2.1:1", "X-User", "ann") }()
	<-in
	ctx := context.Background()
	before := [2]limiter.Decision{}
	before[0], _ = perIP.Peek(ctx, "192.0.2.2", 1)
	before[1], _ = perUser.Peek(ctx, "ann", 1)
	obs.events = nil
	w := call(h, "192.0.2.2:1", "X-User", "ann") // ann again, from another address
	if w.Code != http.StatusTooManyRequests {
		t.Fatalf("a second request of ann with one slot: %d, want 429", w.Code)
	}
	wantHeaders(t, w, map[string]string{
		"Retry-After": "1", "X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "",
		// Every policy that applied, the rates refunded: r as before it.
		"RateLimit":        `"per-ip-1m";r=10;t=30, "per-ip-1s";r=5;t=1, "per-user";r=19;t=30, "exports";r=0`,
		"RateLimit-Policy": `"per-ip-1m";q=10;w=60, "per-ip-1s";q=5;w=1, "per-user";q=20;w=60, "exports";q=1;qu="concurrent-requests"`,
	})
	after := [2]limiter.Decision{}
	after[0], _ = perIP.Peek(ctx, "192.0.2.2", 1)
	after[1], _ = perUser.Peek(ctx, "ann", 1)
	for i := range after {
		for j := range after[i].NumWindows() {
			if b, a := before[i].WindowAt(j), after[i].WindowAt(j); a.Remaining != b.Remaining {
				t.Errorf("%s window %v: %d left after the cap's refusal, %d before", after[i].Policy.Name(), a.Window, a.Remaining, b.Remaining)
			}
		}
	}
	want := []middleware.Outcome{middleware.Allowed, middleware.Allowed, middleware.Denied, middleware.Refunded, middleware.Refunded}
	if got := obs.outcomes(); !equalOutcomes(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if e := obs.events[2]; e.Policy != f.Policy() || e.Key != "hdr:X-User:ann" || e.Decision.RetryAfter != time.Second {
		t.Fatalf("the cap's event: %+v", e)
	}
	close(out)
	if w := <-done; w.Code != http.StatusOK {
		t.Fatalf("the holder: %d", w.Code)
	}
	// The slot is back: the next request passes, the first charged to
	// its address, and its headers list the cap beside the rates.
	w = call(h, "192.0.2.2:1", "X-User", "ann")
	wantHeaders(t, w, map[string]string{
		"X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4",
		"RateLimit": `"per-ip-1m";r=9;t=30, "per-ip-1s";r=4;t=1, "per-user";r=18;t=30, "exports";r=0`,
	})
	if w.Code != http.StatusOK {
		t.Fatalf("after the holder ended: %d", w.Code)
	}
}

// A request a rate refuses never asks the cap.
func TestInFlightRateRefusalTakesNoSlot(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(1))
	f := newInFlight(t, clk, "exports", 1)
	obs := &recorder{}
	mw := newMiddleware(t, l, middleware.WithInFlight(f, nil), middleware.WithObserver(obs.observe))
	finish := holdOne(t, mw, "192.0.2.1:1")
	obs.events = nil
	if w := call(mw(&okHandler{}), "192.0.2.1:1"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("over the rate: %d, Retry-After %q, want 429 and the rate's 60", w.Code, w.Header().Get("Retry-After"))
	}
	if got := obs.outcomes(); !equalOutcomes(got, []middleware.Outcome{middleware.Denied}) || obs.events[0].Policy == f.Policy() {
		t.Fatalf("events %v, want the rate's refusal alone", got)
	}
	finish()
}

// The middleware's key is the cap's when WithInFlight is given none; a
// key of its own that fails answers 400 and charges nothing.
func TestInFlightKeys(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(10))
	f := newInFlight(t, clk, "exports", 1)
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	obs := &recorder{}
	mw := newMiddleware(t, l, middleware.WithInFlight(f, user), middleware.WithObserver(obs.observe))
	if w := call(mw(&okHandler{}), "192.0.2.1:1"); w.Code != http.StatusBadRequest {
		t.Fatalf("no X-User: %d, want 400", w.Code)
	}
	if got := obs.outcomes(); !equalOutcomes(got, []middleware.Outcome{middleware.KeyError}) || obs.events[0].Policy != f.Policy() {
		t.Fatalf("events %v, want the cap's KeyError alone", got)
	}
	wantRemaining(t, l, "192.0.2.1", 10)
	finish := holdOne(t, newMiddleware(t, l, middleware.WithInFlight(f, nil)), "192.0.2.1:1")
	defer finish()
	if n := slotsLeft(t, f, "192.0.2.1"); n != 0 {
		t.Fatalf("the cap keyed by the middleware's key: %d slots left for the address, want 0", n)
	}
}

// In shadow mode a cap's refusal lets the request through holding no
// slot, with the rates refunded, as enforcing would have counted.
func TestInFlightShadow(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(10))
	f := newInFlight(t, clk, "exports", 1)
	g := newInFlight(t, clk, "global", 100)
	obs := &recorder{}
	mw := newMiddleware(t, l, middleware.WithShadow(), middleware.WithInFlight(f, nil), middleware.WithInFlight(g, nil), middleware.WithObserver(obs.observe))
	finish := holdOne(t, mw, "192.0.2.1:1")
	obs.events = nil
	w := call(mw(&okHandler{}), "192.0.2.1:1")
	if w.Code != http.StatusOK || w.Header().Get("Retry-After") != "" {
		t.Fatalf("shadow: %d, Retry-After %q, want 200 and none", w.Code, w.Header().Get("Retry-After"))
	}
	want := []middleware.Outcome{middleware.Allowed, middleware.ShadowDenied, middleware.Refunded}
	if got := obs.outcomes(); !equalOutcomes(got, want) {
		t.Fatalf("events %v, want %v: the second cap not asked, nothing released", got, want)
	}
	wantRemaining(t, l, "192.0.2.1", 9) // the holder's charge alone
	if n := slotsLeft(t, g, "192.0.2.1"); n != 99 {
		t.Fatalf("the global cap: %d left, want 99 (the holder's)", n)
	}
	finish()
	// A rate's shadow refusal asks no cap, as enforcing would not.
	spent := newLimiter(t, clk, "spent", limiter.PerMinute(1))
	obs.events = nil
	mw = newMiddleware(t, spent, middleware.WithShadow(), middleware.WithInFlight(f, nil), middleware.WithObserver(obs.observe))
	for range 2 {
		call(mw(&okHandler{}), "192.0.2.9:1")
	}
	want = []middleware.Outcome{middleware.Allowed, middleware.Allowed, middleware.Released, middleware.ShadowDenied}
	if got := obs.outcomes(); !equalOutcomes(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// A cap that cannot decide is answered as a limiter's error, or passed
// over with WithFailOpen.
func TestInFlightError(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(10))
	f := newInFlight(t, clk, "exports", 1)
	f.Close() // every Acquire fails: ErrClosed
	obs := &recorder{}
	if w := call(newMiddleware(t, l, middleware.WithInFlight(f, nil), middleware.WithObserver(obs.observe))(&okHandler{}), "192.0.2.1:1"); w.Code != 500 {
		t.Fatalf("a closed cap: %d, want 500", w.Code)
	}
	if e := obs.events[len(obs.events)-1]; e.Outcome != middleware.Error || !errors.Is(e.Err, limiter.ErrClosed) {
		t.Fatalf("event %+v, want the cap's Error", e)
	}
	if w := call(newMiddleware(t, l, middleware.WithInFlight(f, nil), middleware.WithFailOpen())(&okHandler{}), "192.0.2.1:1"); w.Code != 200 {
		t.Fatalf("a closed cap, failing open: %d, want 200", w.Code)
	}
}

// Stacked middlewares list every cap in one set of headers: the rates'
// windows, then the caps, the outermost first.
func TestInFlightStackedHeaders(t *testing.T) {
	clk := newFakeClock(t0)
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	outer := newMiddleware(t, newLimiter(t, clk, "site", limiter.PerMinute(100)), middleware.WithHeaders(hw),
		middleware.WithInFlight(newInFlight(t, clk, "site-slots", 50), nil))
	inner := newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(10)), middleware.WithHeaders(hw),
		middleware.WithInFlight(newInFlight(t, clk, "exports", 2), nil))
	w := call(outer(inner(&okHandler{})), "192.0.2.1:1")
	wantHeaders(t, w, map[string]string{
		"RateLimit":        `"site";r=99;t=60, "api";r=9;t=60, "site-slots";r=49, "exports";r=1`,
		"RateLimit-Policy": `"site";q=100;w=60, "api";q=10;w=60, "site-slots";q=50;qu="concurrent-requests", "exports";q=2;qu="concurrent-requests"`,
	})
}

func TestInFlightOptionErrors(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "api", limiter.PerMinute(10))
	f := newInFlight(t, clk, "exports", 1)
	for _, c := range []struct {
		name string
		lim  middleware.Limiter
		opts []middleware.Option
		want string
	}{
		{"nil_inflight", l, []middleware.Option{middleware.WithInFlight(nil, nil)}, "WithInFlight (cap 0): InFlight is nil"},
		{"three_caps", l, []middleware.Option{middleware.WithInFlight(f, nil), middleware.WithInFlight(f, nil), middleware.WithInFlight(f, nil)}, "3 in-flight caps"},
		{"limiter_without_refund", &stubLimiter{policy: limiter.MustPolicy("s", limiter.PerMinute(1))},
			[]middleware.Option{middleware.WithInFlight(f, nil)}, "WithInFlight (a request a cap refuses is refunded): limiter 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := middleware.New(c.lim, c.opts...)
			if !errors.Is(err, middleware.ErrInvalidOption) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want ErrInvalidOption saying %q", err, c.want)
			}
		})
	}
}
