package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Every answer tells the truth (issue 36): what the headers say is what
// the counts are, on the memory store and on Redis.

// onStores runs f once per store kind: a limiter maker on one memory
// store, and one on a Redis store of its own prefix on the shared Redis.
func onStores(t *testing.T, clk limiter.Clock, f func(t *testing.T, mk func(p *limiter.Policy) *limiter.Limiter)) {
	t.Helper()
	for _, kind := range []string{"memory", "redis"} {
		t.Run(kind, func(t *testing.T) {
			var st limiter.Store
			if kind == "memory" {
				ms, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = ms.Close() })
				st = ms
			} else {
				rs, err := redisstore.New(redistest.Shared(t), redisstore.WithPrefix(fmt.Sprintf("answers-%s-%d:", t.Name(), time.Now().UnixNano())),
					redisstore.WithTimeout(2*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = rs.Close() })
				st = rs
			}
			f(t, func(p *limiter.Policy) *limiter.Limiter {
				l, err := limiter.New(p, limiter.WithStore(st), limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = l.Close() })
				return l
			})
		})
	}
}

// TestRateLimitListsEveryRule: with a plan (a month in Paris and a
// minute) and a second limiter (an hour per user), RateLimit lists every
// window RateLimit-Policy names, in the same order, on an admission and
// on the refusal of the second limiter (before, it listed the first
// rule's windows alone).
func TestRateLimitListsEveryRule(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(time.Date(2026, 12, 10, 12, 0, 30, 0, time.UTC))
	onStores(t, clk, func(t *testing.T, mk func(*limiter.Policy) *limiter.Limiter) {
		plan := mk(limiter.MustPolicy("plan", limiter.PerMonthIn(1000, paris), limiter.PerMinute(10)))
		user := mk(limiter.MustPolicy("user", limiter.PerHour(1)))
		h := newMiddleware(t, plan, middleware.WithLimiter(user, keyfunc.Must(keyfunc.Header("X-User"))),
			middleware.WithHeaders(mustHeaders(t, headers.WithDraftHeaders())))(&okHandler{})
		policy := `"plan-month";q=1000;w=2678400, "plan-1m";q=10;w=60, "user";q=1;w=3600`
		month := time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC).Sub(clk.Now()) / time.Second
		w := call(h, "192.0.2.1:1", "X-User", "ann")
		wantHeaders(t, w, map[string]string{
			"RateLimit-Policy": policy,
			"RateLimit":        fmt.Sprintf(`"plan-month";r=999;t=%d, "plan-1m";r=9;t=30, "user";r=0;t=3570`, month),
		})
		w = call(h, "192.0.2.1:1", "X-User", "ann")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("second request: %d, want 429 from the user's hour", w.Code)
		}
		wantHeaders(t, w, map[string]string{
			"RateLimit-Policy": policy,
			"RateLimit":        fmt.Sprintf(`"plan-month";r=998;t=%d, "plan-1m";r=8;t=30, "user";r=0;t=3570`, month),
			"Retry-After":      "3570",
		})
	})
}

// tokensProxy is a handler that reports the tokens its "used" query
// names, before it writes its answer, or after its first byte when
// "stream" is set (as a streamed answer learns its cost at its end).
var tokensProxy = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	used, _ := strconv.ParseInt(r.URL.Query().Get("used"), 10, 64)
	if r.URL.Query().Get("stream") != "" {
		_, _ = io.WriteString(w, "chunk ")
		w.(http.Flusher).Flush()
		middleware.Report(r.Context(), "acme-tokens", used)
		_, _ = io.WriteString(w, "end")
		return
	}
	middleware.Report(r.Context(), "acme-tokens", used)
	_, _ = io.WriteString(w, "answer")
})

// maxTokens reserves the "max_tokens" of the request.
func maxTokens(r *http.Request) int64 {
	n, _ := strconv.ParseInt(r.URL.Query().Get("max_tokens"), 10, 64)
	return n
}

// TestHeadersAtTheFirstByte: a handler that reserved 102 tokens and
// reported 22 before it wrote gets headers at 22, what the usage then
// says (before, they said the reservation); a streamed answer shows what
// is known at its first byte: the reservation.
func TestHeadersAtTheFirstByte(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	onStores(t, clk, func(t *testing.T, mk func(*limiter.Policy) *limiter.Limiter) {
		requests := mk(limiter.MustPolicy("api", limiter.PerMinute(60)))
		tokens := mk(limiter.MustPolicy("tokens", limiter.PerDayIn(50_000, time.UTC)).MustUnit("acme-tokens"))
		hw := mustHeaders(t, headers.WithDraftHeaders(), headers.WithUnitHeaders())
		h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, maxTokens), middleware.WithHeaders(hw))(tokensProxy)

		w := getFrom(h, "/chat?max_tokens=102&used=22")
		if got := w.Header().Get("X-RateLimit-Remaining-Tokens"); got != "49978" {
			t.Fatalf("reserved 102, reported 22 before the first byte: X-RateLimit-Remaining-Tokens %q, want 49978", got)
		}
		u, err := tokens.Usage(context.Background(), "192.0.2.1")
		if err != nil || u.Windows[0].Remaining != 49_978 {
			t.Fatalf("usage after the settle: %+v, %v; want 49978 left, as the header said", u, err)
		}
		if got := w.Header().Get("RateLimit"); !strings.Contains(got, `"tokens";r=49978;`) {
			t.Fatalf("RateLimit %q: want the tokens at 49978", got)
		}

		w = getFrom(h, "/chat?max_tokens=102&used=22&stream=1")
		if got := w.Header().Get("X-RateLimit-Remaining-Tokens"); got != strconv.Itoa(49_978-102) {
			t.Fatalf("streamed, reported after the first byte: X-RateLimit-Remaining-Tokens %q, want %d (the reservation)", got, 49_978-102)
		}
		if u, _ := tokens.Usage(context.Background(), "192.0.2.1"); u.Windows[0].Remaining != 49_978-22 {
			t.Fatalf("usage after the streamed settle: %d left, want %d", u.Windows[0].Remaining, 49_978-22)
		}
	})
}

// TestCostThatCanNeverFit: a reservation of 60,000 tokens on a day of
// 50,000 is refused without a wait: 429 with no Retry-After and a body
// that says the cost exceeds the limit; the observer's decision says so;
// the requests limit is not charged.
func TestCostThatCanNeverFit(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	onStores(t, clk, func(t *testing.T, mk func(*limiter.Policy) *limiter.Limiter) {
		requests := mk(limiter.MustPolicy("api", limiter.PerMinute(60)))
		tokens := mk(limiter.MustPolicy("tokens", limiter.PerDayIn(50_000, time.UTC)).MustUnit("acme-tokens"))
		var rec recorder
		h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, maxTokens), middleware.WithObserver(rec.observe))(tokensProxy)
		w := getFrom(h, "/chat?max_tokens=60000&used=1")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("status %d, want 429", w.Code)
		}
		if v, ok := w.Header()["Retry-After"]; ok {
			t.Fatalf("Retry-After %q: no wait admits 60,000 on a day of 50,000", v)
		}
		if body := w.Body.String(); !strings.Contains(body, "request cost exceeds the rate limit of 50000 per day") {
			t.Fatalf("body %q: want it to say the cost exceeds the limit", body)
		}
		var denied *middleware.Event
		for i := range rec.events {
			if rec.events[i].Outcome == middleware.Denied {
				denied = &rec.events[i]
			}
		}
		if denied == nil || !denied.Decision.CostExceedsLimit || denied.Decision.RetryAfter != 0 {
			t.Fatalf("observer's refusal %+v: want CostExceedsLimit, no RetryAfter", denied)
		}
		if got := usedOf(t, requests, "192.0.2.1"); got[0] != 0 {
			t.Fatalf("requests used %v, want 0: a refused request is charged by none", got)
		}
	})
}

// TestUnitHeadersSideBySide: with unit headers on, a refusal by the
// tokens carries the requests' set beside the tokens' (before, it dropped
// it); the plain X-RateLimit-* describe the tightest window, the tokens'.
func TestUnitHeadersSideBySide(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	onStores(t, clk, func(t *testing.T, mk func(*limiter.Policy) *limiter.Limiter) {
		requests := mk(limiter.MustPolicy("api", limiter.PerMinute(60)))
		tokens := mk(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens"))
		hw := mustHeaders(t, headers.WithUnitHeaders())
		h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, maxTokens), middleware.WithHeaders(hw))(tokensProxy)
		if w := getFrom(h, "/chat?max_tokens=900&used=900"); w.Code != http.StatusOK {
			t.Fatalf("first call: %d", w.Code)
		}
		w := getFrom(h, "/chat?max_tokens=500&used=500")
		if w.Code != http.StatusTooManyRequests {
			t.Fatalf("500 tokens more of 1000 with 900 spent: %d, want 429", w.Code)
		}
		wantHeaders(t, w, map[string]string{
			"X-RateLimit-Limit-Requests": "60", "X-RateLimit-Remaining-Requests": "59",
			"X-RateLimit-Limit-Tokens": "1000", "X-RateLimit-Remaining-Tokens": "100",
			"X-RateLimit-Limit": "1000", "X-RateLimit-Remaining": "100", "Retry-After": "50",
		})
	})
}

// TestMisspeltUnitReachesTheObserver: a report in a unit no limit around
// the handler counts ("acme-tokenz") returns false, is told to the
// observer as a misconfiguration, and the call settles at its
// reservation.
func TestMisspeltUnitReachesTheObserver(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	requests := newLimiter(t, clk, "api", limiter.PerMinute(60))
	tokens := tokensLimiter(t, clk, "tokens", limiter.PerMinute(1000))
	var rec recorder
	took := true
	h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, nil), middleware.WithObserver(rec.observe))(
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			took = middleware.Report(r.Context(), "acme-tokenz", 40)
		}))
	if w := getFrom(h, "/chat"); w.Code != http.StatusOK {
		t.Fatalf("status %d, want 200: a misreport is no refusal", w.Code)
	}
	if took {
		t.Fatal("Report in a misspelt unit returned true")
	}
	var mis *middleware.Event
	for i := range rec.events {
		if rec.events[i].Outcome == middleware.Misconfigured {
			mis = &rec.events[i]
		}
	}
	if mis == nil || !errors.Is(mis.Err, middleware.ErrMisconfigured) || !strings.Contains(mis.Err.Error(), `"acme-tokenz"`) ||
		!strings.Contains(mis.Err.Error(), `"acme-tokens"`) || mis.Cost != 40 {
		t.Fatalf("observer's events %+v: want a Misconfigured one naming acme-tokenz and the units counted, cost 40", rec.events)
	}
	if got := usedOf(t, tokens, "192.0.2.1"); got[0] != 1 {
		t.Fatalf("tokens used %v, want 1: settled at the reservation", got)
	}
	// A unit the middleware counts is no misreport, even refused.
	rec.events = nil
	h = newMiddleware(t, newLimiter(t, clk, "api2", limiter.PerMinute(60)), middleware.WithReported(tokensLimiter(t, clk, "tokens2", limiter.PerMinute(10)), nil, nil),
		middleware.WithObserver(rec.observe))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		middleware.Report(r.Context(), "acme-tokens", -1)
	}))
	getFrom(h, "/chat")
	for _, e := range rec.events {
		if e.Outcome == middleware.Misconfigured {
			t.Fatalf("a bad cost in a counted unit was reported as a misconfiguration: %+v", e)
		}
	}
}

// TestPlainHeadersAtTheFirstByte: with X-RateLimit-* alone (the default
// writer), a request whose tokens were the tightest window at their
// reservation (102 of 150) and that reported 22 before it wrote is
// described by the requests, then the tightest (59 of 60), in its
// headers and in DecisionFrom after the report.
func TestPlainHeadersAtTheFirstByte(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	onStores(t, clk, func(t *testing.T, mk func(*limiter.Policy) *limiter.Limiter) {
		requests := mk(limiter.MustPolicy("api", limiter.PerMinute(60)))
		tokens := mk(limiter.MustPolicy("tokens", limiter.PerDayIn(150, time.UTC)).MustUnit("acme-tokens"))
		var before, after limiter.Decision
		h := newMiddleware(t, requests, middleware.WithReported(tokens, nil, maxTokens))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			before, _ = middleware.DecisionFrom(r.Context())
			middleware.Report(r.Context(), "acme-tokens", 22)
			after, _ = middleware.DecisionFrom(r.Context())
			_, _ = io.WriteString(w, "answer")
		}))
		w := getFrom(h, "/chat?max_tokens=102")
		wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": "60", "X-RateLimit-Remaining": "59"})
		if before.Limit != 150 || before.Remaining != 48 || after.Limit != 60 || after.Remaining != 59 {
			t.Fatalf("DecisionFrom before the report %d of %d, after %d of %d; want 48 of 150, then 59 of 60",
				before.Remaining, before.Limit, after.Remaining, after.Limit)
		}
	})
}
