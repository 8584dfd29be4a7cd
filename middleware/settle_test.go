package middleware_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// usedOf returns what key has used of each of l's windows.
func usedOf(t *testing.T, l *limiter.Limiter, key string) []int64 {
	t.Helper()
	u, err := l.Usage(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, w := range u.Windows {
		out = append(out, w.Used)
	}
	return out
}

// tokensLimiter returns a limiter counting acme-tokens, on its own store.
func tokensLimiter(t *testing.T, clk limiter.Clock, name string, rates ...limiter.Rate) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limiter.MustPolicy(name, rates...).MustUnit("acme-tokens"), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// reporting answers each request after reporting the tokens its
// "tokens" query parameter names, if any.
var reporting = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if s := r.URL.Query().Get("tokens"); s != "" {
		n, _ := strconv.ParseInt(s, 10, 64)
		if !middleware.Report(r.Context(), "acme-tokens", n) {
			http.Error(w, "report refused", http.StatusInternalServerError)
			return
		}
	}
	_, _ = io.WriteString(w, "answer")
})

// A request reserved at 1 and settled at 500 leaves a count of 500; a
// settle past the limit refuses the key, with Retry-After to the
// boundary, until its window ends, and then admits it. The observer
// sees each settle with its actual cost.
func TestReportedSettles(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	var rec recorder
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil), middleware.WithObserver(rec.observe))(reporting)

	if w := getFrom(h, "/chat?tokens=500"); w.Code != http.StatusOK {
		t.Fatalf("first call: %d %s", w.Code, w.Body)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 500 {
		t.Fatalf("reserved 1, reported 500: tokens used %v, want 500", got)
	}
	if got := usedOf(t, requests, "192.0.2.1"); got[0] != 1 {
		t.Fatalf("requests used %v, want 1", got)
	}
	var settled []middleware.Event
	for _, e := range rec.events {
		if e.Outcome == middleware.Settled {
			settled = append(settled, e)
		}
	}
	if len(settled) != 1 || settled[0].Cost != 500 || settled[0].Err != nil || settled[0].Policy != tokens.Policy() {
		t.Fatalf("settled events %+v, want one at cost 500 under the tokens policy", settled)
	}

	// 500 + 1 reserved, reported 800: 1300 of 1000, in debt.
	if w := getFrom(h, "/chat?tokens=800"); w.Code != http.StatusOK {
		t.Fatalf("second call: %d", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 1300 {
		t.Fatalf("tokens used %v, want 1300 (the work is done: a settle is never refused)", got)
	}
	w := getFrom(h, "/chat?tokens=1")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "50" {
		t.Fatalf("in debt: %d Retry-After %q, want 429 and 50 (the minute's end)", w.Code, w.Header().Get("Retry-After"))
	}
	if got := usedOf(t, requests, "192.0.2.1"); got[0] != 2 {
		t.Fatalf("a request the tokens refused: requests used %v, want 2 (charged by none)", got)
	}
	clk.Set(t0.Add(time.Minute))
	if w := getFrom(h, "/chat?tokens=10"); w.Code != http.StatusOK {
		t.Fatalf("the next minute: %d, want 200", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 10 {
		t.Fatalf("the next minute: tokens used %v, want 10", got)
	}
}

// A handler that reports nothing is settled at its reservation; one that
// reports less than it reserved gets the difference back.
func TestUnreportedSettlesAtReservation(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	reserve := func(r *http.Request) int64 {
		n, _ := strconv.ParseInt(r.URL.Query().Get("max"), 10, 64)
		return n
	}
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, reserve))(reporting)

	if w := getFrom(h, "/chat?max=100"); w.Code != http.StatusOK {
		t.Fatalf("%d", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 100 {
		t.Fatalf("reserved 100, reported nothing: used %v, want 100", got)
	}
	if w := getFrom(h, "/chat?max=400&tokens=30"); w.Code != http.StatusOK {
		t.Fatalf("%d", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 130 {
		t.Fatalf("reserved 400, reported 30: used %v, want 130", got)
	}
	// A reservation beyond what is left is refused, and charges nothing.
	if w := getFrom(h, "/chat?max=900"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("a reservation of 900 with 870 left: %d, want 429", w.Code)
	}
	if got := usedOf(t, requests, "192.0.2.1"); got[0] != 2 {
		t.Fatalf("requests used %v, want 2", got)
	}
}

// Report refuses what cannot be a cost and a unit no limit counts; a
// refused report leaves the settle at the reservation.
func TestReportRefusesBadCosts(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	var got []bool
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		got = append(got,
			middleware.Report(ctx, "acme-tokens", -1),
			middleware.Report(ctx, "acme-tokens", limiter.MaxLimit+1),
			middleware.Report(ctx, "acme-token", 5),
			middleware.Report(ctx, "requests", 5),
			middleware.Report(ctx, "acme-tokens", limiter.MaxLimit),
			middleware.Report(ctx, "acme-tokens", 1), // past MaxLimit in all
		)
	}))
	getFrom(h, "/")
	want := []bool{false, false, false, false, true, false}
	if len(got) != len(want) {
		t.Fatalf("reports %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("report %d: %v, want %v", i, got[i], want[i])
		}
	}
	if middleware.Report(context.Background(), "acme-tokens", 1) {
		t.Error("Report outside a middleware took the cost")
	}
	u := usedOf(t, tokens, "192.0.2.1")
	if u[0] != limiter.MaxLimit {
		t.Fatalf("used %v, want MaxLimit: the valid report alone", u)
	}
}

// Reports add up, from any goroutine while the handler runs, and reach
// every middleware around the handler that meters the unit: a monthly
// budget outside, a per-route minute inside.
func TestReportsAddUpAcrossStackedMiddlewares(t *testing.T) {
	clk := newFakeClock(t0)
	site := newLimiter(t, clk, "site", limiter.PerMinute(1000))
	month := tokensLimiter(t, clk, "month", limiter.PerMonthIn(1_000_000, time.UTC))
	route := newLimiter(t, clk, "route", limiter.PerMinute(60))
	minute := tokensLimiter(t, clk, "minute", limiter.PerMinute(40_000))
	handler := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() { middleware.Report(r.Context(), "acme-tokens", 7) })
		}
		wg.Wait()
	})
	h := newMiddleware(t, site, middleware.WithReported(month, nil, nil))(
		newMiddleware(t, route, middleware.WithReported(minute, nil, nil))(handler))
	getFrom(h, "/")
	if m, n := usedOf(t, month, "192.0.2.1"), usedOf(t, minute, "192.0.2.1"); m[0] != 70 || n[0] != 70 {
		t.Fatalf("month used %v, minute used %v: want 70 each", m, n)
	}
}

// A handler that panics is settled at what it reported before.
func TestPanicSettles(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		middleware.Report(r.Context(), "acme-tokens", 300)
		panic("model server gone")
	}))
	func() {
		defer func() { _ = recover() }()
		getFrom(h, "/")
	}()
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 300 {
		t.Fatalf("used %v, want 300", got)
	}
}

// A response WithCountIf does not count is charged nothing in any unit.
func TestUncountedStatusChargesNoUnit(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil),
		middleware.WithCountIf(func(status int) bool { return status < 500 }))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleware.Report(r.Context(), "acme-tokens", 300)
		w.WriteHeader(http.StatusBadGateway)
	}))
	getFrom(h, "/")
	if r, k := usedOf(t, requests, "192.0.2.1"), usedOf(t, tokens, "192.0.2.1"); r[0] != 0 || k[0] != 0 {
		t.Fatalf("a 502 not counted: requests %v tokens %v, want 0 and 0", r, k)
	}
}

// A limit that cannot decide (no FailOpen) leaves the request charged by
// none of the others.
func TestFailedLimitChargesNone(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	_ = tokens.Close() // a closed limiter cannot decide
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil))(reporting)
	if w := getFrom(h, "/"); w.Code != http.StatusInternalServerError {
		t.Fatalf("%d, want 500", w.Code)
	}
	if got := usedOf(t, requests, "192.0.2.1"); got[0] != 0 {
		t.Fatalf("requests used %v, want 0", got)
	}
}

// With unit headers and the draft fields on, each unit's set and the
// draft RateLimit agree with the counts the limiters keep.
func TestUnitHeadersAgreeWithCounts(t *testing.T) {
	clk := newFakeClock(t0.Add(15 * time.Second))
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(40_000))
	hw, err := headers.New(headers.WithDraftHeaders(), headers.WithUnitHeaders())
	if err != nil {
		t.Fatal(err)
	}
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil), middleware.WithHeaders(hw))(reporting)
	getFrom(h, "/chat?tokens=1500")
	w := getFrom(h, "/chat?tokens=200")
	// Written at the first byte: the second request is charged 1, and
	// its handler reported its 200 tokens before it wrote (issue 36: the
	// headers said the reservation).
	reqLeft, tokLeft := 60-2, 40_000-1500-200
	wantHeaders(t, w, map[string]string{
		"X-RateLimit-Limit-Requests":     "60",
		"X-RateLimit-Remaining-Requests": strconv.Itoa(reqLeft),
		"X-RateLimit-Limit-Tokens":       "40000",
		"X-RateLimit-Remaining-Tokens":   strconv.Itoa(tokLeft),
		"X-RateLimit-Reset-Tokens":       strconv.FormatInt(t0.Add(time.Minute).Unix(), 10),
		"RateLimit":                      `"api";r=` + strconv.Itoa(reqLeft) + `;t=45, "tokens";r=` + strconv.Itoa(tokLeft) + `;t=45`,
		"RateLimit-Policy":               `"api";q=60;w=60, "tokens";q=40000;w=60;qu="acme-tokens"`,
	})
	u := usedOf(t, tokens, "192.0.2.1")
	if u[0] != 1700 {
		t.Fatalf("tokens used %v, want 1700", u)
	}
	w = getFrom(h, "/chat")
	if got, want := w.Header().Get("X-RateLimit-Remaining-Tokens"), strconv.FormatInt(40_000-1700-1, 10); got != want {
		t.Fatalf("X-RateLimit-Remaining-Tokens %s after the settle, want %s", got, want)
	}
}

// WithReported and WithBytes refuse, when the middleware is built, a
// limit they could never settle.
func TestMeteredOptionsChecked(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	plain := newLimiter(t, clk, "plain", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	bytesL := newBytesLimiter(t, clk, 1000)
	ms, err := limiter.NewMemoryStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ms.Close() })
	noSettle, err := limiter.New(limiter.MustPolicy("nosettle", limiter.PerMinute(10)).MustUnit("acme-tokens"),
		limiter.WithClock(clk), limiter.WithStore(refundOnlyStore{ms}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = noSettle.Close() })
	for _, tt := range []struct {
		name string
		opt  middleware.Option
		want string
	}{
		{"reported requests", middleware.WithReported(plain, nil, nil), `WithReported (policy "plain"): the policy counts requests`},
		{"reported bytes", middleware.WithReported(bytesL, nil, nil), `WithReported (policy "download"): the policy counts content-bytes`},
		{"bytes of tokens", middleware.WithBytes(tokens, nil), `WithBytes (policy "tokens"): the policy counts acme-tokens, not content-bytes`},
		{"store cannot settle", middleware.WithReported(noSettle, nil, nil), `cannot settle a cost`},
		{"nil limiter", middleware.WithReported(nil, nil, nil), `limiter is nil`},
		{"stub", middleware.WithBytes(&stubLimiter{policy: limiter.MustPolicy("stub", limiter.PerMinute(1)).MustUnit(limiter.UnitContentBytes)}, nil), `has no Settle method`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := middleware.New(requests, tt.opt)
			if !errors.Is(err, middleware.ErrInvalidOption) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: %v, want ErrInvalidOption saying %q", err, tt.want)
			}
		})
	}
}

// refundOnlyStore is a store that is no limiter.Settler.
type refundOnlyStore struct{ s *limiter.MemoryStore }

func (r refundOnlyStore) Take(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	return r.s.Take(ctx, req)
}

func (r refundOnlyStore) Reset(ctx context.Context, key string, p *limiter.Policy, now time.Time) error {
	return r.s.Reset(ctx, key, p, now)
}

func (r refundOnlyStore) Refund(ctx context.Context, req limiter.Request, d limiter.Decision) error {
	return r.s.Refund(ctx, req, d)
}

// An outer middleware's metered limit settles at nothing for a request
// an inner middleware answered itself: one whose key it could not find
// (400), one it refused (429); and at its reservation for one served.
func TestOuterSettlesAtNothingWhenInnerAnswers(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	reserve := func(*http.Request) int64 { return 100 }
	outer := newMiddleware(t, requests, middleware.WithReported(tokens, nil, reserve))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	inner := newMiddleware(t, newLimiter(t, clk, "per-user", limiter.PerMinute(1)), middleware.WithKey(user))
	h := outer(inner(reporting))

	if w := getFrom(h, "/chat"); w.Code != http.StatusBadRequest {
		t.Fatalf("no X-User: %d, want 400", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 0 {
		t.Fatalf("a request the inner middleware could not identify: tokens used %v, want 0", got)
	}
	get := func() *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/chat", nil)
		r.RemoteAddr = "192.0.2.1:1234"
		r.Header.Set("X-User", "ada")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	if w := get(); w.Code != http.StatusOK {
		t.Fatalf("ada's first: %d, want 200", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 100 {
		t.Fatalf("a request served, nothing reported: tokens used %v, want its reservation, 100", got)
	}
	if w := get(); w.Code != http.StatusTooManyRequests {
		t.Fatalf("ada's second: %d, want 429", w.Code)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 100 {
		t.Fatalf("a request the inner middleware refused: tokens used %v, want 100 as before", got)
	}
}
