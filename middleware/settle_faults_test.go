package middleware_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A refusal by a middleware inside settles the metered limits of the
// middlewares around it at nothing: a client held by a route's limit
// does not drain its monthly tokens with reservations no handler used.
func TestInnerRefusalSettlesOuterAtNothing(t *testing.T) {
	clk := newFakeClock(t0)
	site := newLimiter(t, clk, "site", limiter.PerMinute(100))
	month := tokensLimiter(t, clk, "month", limiter.PerMonthIn(1_000_000, t0.Location()))
	route := newLimiter(t, clk, "route", limiter.PerMinute(1))
	reserve := func(*http.Request) int64 { return 8192 }
	h := newMiddleware(t, site, middleware.WithReported(month, nil, reserve))(newMiddleware(t, route)(reporting))
	if w := getFrom(h, "/?tokens=10"); w.Code != http.StatusOK {
		t.Fatalf("first: %d", w.Code)
	}
	for range 2 {
		if w := getFrom(h, "/?tokens=10"); w.Code != http.StatusTooManyRequests {
			t.Fatalf("past the route's limit: %d, want 429", w.Code)
		}
	}
	if got := usedOf(t, month, "192.0.2.1"); got[0] != 10 {
		t.Fatalf("month used %v, want 10: the refused requests cost nothing", got)
	}
}

// A cap that cannot decide, or a client gone while it is asked, leaves
// the request charged by none of the middleware's limits.
func TestCapFailureChargesNone(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	f, err := limiter.NewInFlight("calls", 2, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	_ = f.Close() // a closed cap cannot decide
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, func(*http.Request) int64 { return 100 }), middleware.WithInFlight(f, nil))(reporting)
	if w := getFrom(h, "/?tokens=5"); w.Code != http.StatusInternalServerError {
		t.Fatalf("%d, want 500", w.Code)
	}
	if r, k := usedOf(t, requests, "192.0.2.1"), usedOf(t, tokens, "192.0.2.1"); r[0] != 0 || k[0] != 0 {
		t.Fatalf("requests %v, tokens %v: want nothing charged", r, k)
	}
}

// Shadow mode charges a metered middleware what enforcing would: a
// request the tokens would refuse is let through charged by none.
func TestShadowMeteredChargesAsEnforcing(t *testing.T) {
	for _, shadow := range []bool{false, true} {
		clk := newFakeClock(t0)
		requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
		tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(10))
		opts := []middleware.Option{middleware.WithReported(tokens, nil, func(*http.Request) int64 { return 100 })}
		want := http.StatusTooManyRequests
		if shadow {
			opts, want = append(opts, middleware.WithShadow()), http.StatusOK
		}
		h := newMiddleware(t, requests, opts...)(reporting)
		if w := getFrom(h, "/"); w.Code != want {
			t.Fatalf("shadow %v: %d, want %d", shadow, w.Code, want)
		}
		if r := usedOf(t, requests, "192.0.2.1"); r[0] != 0 {
			t.Fatalf("shadow %v: requests %v, want 0, as enforcing", shadow, r)
		}
	}
}

// A reservation the client's input makes 0, negative or huge is held to
// [1, MaxLimit]: failing open does not turn the limit off, and a huge
// one is refused.
func TestReservationHeldInRange(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	var n int64
	h := newMiddleware(t, requests, middleware.WithFailOpen(),
		middleware.WithReported(tokens, nil, func(*http.Request) int64 { return n }))(reporting)
	for _, n = range []int64{0, -5} {
		if w := getFrom(h, "/?tokens=600"); w.Code != http.StatusOK {
			t.Fatalf("reserve %d: %d", n, w.Code)
		}
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 1200 {
		t.Fatalf("tokens %v, want 1200: both admitted at 1 and settled", got)
	}
	n = limiter.MaxLimit + 1
	clk.Advance(60e9)
	if w := getFrom(h, "/?tokens=1"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a reservation past MaxLimit: %d, want 429", w.Code)
	}
}

// Report takes nothing once the middleware has settled (a goroutine the
// handler left behind), nor for a metered limit that failed open: it
// would be settled nowhere.
func TestReportRefusedWhenNothingWillSettle(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	var ctx context.Context
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx = r.Context()
	}))
	getFrom(h, "/")
	if middleware.Report(ctx, "acme-tokens", 5) {
		t.Error("Report after the settle took the cost")
	}
	closed := tokensLimiter(t, clk, "closed", limiter.PerMinute(1000))
	_ = closed.Close()
	var took bool
	h = newMiddleware(t, requests, middleware.WithFailOpen(), middleware.WithReported(closed, nil, nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		took = middleware.Report(r.Context(), "acme-tokens", 5)
	}))
	if w := getFrom(h, "/"); w.Code != http.StatusOK || took {
		t.Fatalf("a limit failed open: %d, Report took %v; want 200 and false", w.Code, took)
	}
}

// A settle the store fails is reported to the observer with its error,
// and the count stays at the reservation.
func TestFailedSettleKeepsTheReservation(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	ms, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	tokens, err := limiter.New(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens"),
		limiter.WithClock(clk), limiter.WithStore(failingSettleStore{refundOnlyStore{ms}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tokens.Close() })
	observe, settled := settledOnce()
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, func(*http.Request) int64 { return 100 }), middleware.WithObserver(observe))(reporting)
	if w := getFrom(h, "/?tokens=700"); w.Code != http.StatusOK {
		t.Fatalf("%d", w.Code)
	}
	if e := <-settled; !errors.Is(e.Err, errSettleFailed) || e.Cost != 700 {
		t.Fatalf("settled %+v, want the store's error at cost 700", e)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 100 {
		t.Fatalf("tokens %v, want 100: the reservation", got)
	}
}

var errSettleFailed = errors.New("store: settle failed")

// failingSettleStore is a store whose settles fail.
type failingSettleStore struct{ refundOnlyStore }

func (failingSettleStore) Settle(context.Context, limiter.Request, limiter.Decision, int64) error {
	return errSettleFailed
}

// A metered middleware with a cap gives the slot back once the request
// is settled, on a return and on a panic.
func TestMeteredWithCapReleases(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	f, err := limiter.NewInFlight("calls", 1, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	panics := false
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil), middleware.WithInFlight(f, nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		middleware.Report(r.Context(), "acme-tokens", 7)
		if panics {
			panic("handler failed")
		}
	}))
	for _, panics = range []bool{false, true, false} {
		func() {
			defer func() { _ = recover() }()
			if w := getFrom(h, "/"); w.Code != http.StatusOK {
				t.Fatalf("panics %v: %d, want 200: the slot was given back", panics, w.Code)
			}
		}()
		if u, err := f.Usage(context.Background(), "192.0.2.1"); err != nil || u.Held != 0 {
			t.Fatalf("slots held %+v, %v; want 0", u, err)
		}
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 21 {
		t.Fatalf("tokens %v, want 21", got)
	}
}
