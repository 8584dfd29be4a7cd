package middleware_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/verdict"
	"github.com/fixedwindow/ratelimit/internal/window"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// decision returns what the rule answers for a key that has already spent
// used of p's first rate at now, asking for cost.
func decision(p *limiter.Policy, used int64, now time.Time, cost int64) limiter.Decision {
	var prior [limiter.MaxWindows]limiter.State
	id, _, _ := window.ID(now.UnixMilli(), p.Rate(0).Window.Milliseconds())
	prior[0] = limiter.State{Window: id, Count: used}
	_, d := limiter.Decide(p, prior, now, cost)
	return d
}

func unix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestServeHTTPBranches(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(10))
	now := t0.Add(15 * time.Second)
	allowed := decision(p, 0, now, 1)
	denied := decision(p, 10, now, 1)
	storeErr := errors.New("redisstore: dial tcp 10.9.8.7:6379: connection refused")
	emptyKey := func(*http.Request) (string, error) { return "", nil }
	byHeader := func(r *http.Request, _ string) bool { return r.Header.Get("X-Health") == "1" }
	limitHeaders := map[string]string{"X-RateLimit-Limit": "", "X-RateLimit-Remaining": "", "X-RateLimit-Reset": "", "Retry-After": ""}

	tests := []struct {
		name       string
		d          limiter.Decision
		err        error
		opts       []middleware.Option
		remoteAddr string
		hdr        []string
		wantStatus int
		wantNext   int
		wantCalls  int
		wantBody   string // a substring of the body
		wantHdr    map[string]string
		want       []middleware.Outcome
		wantFailOp bool
	}{
		{
			name: "allowed_calls_next_with_headers", d: allowed,
			wantStatus: 200, wantNext: 1, wantCalls: 1, wantBody: "ok",
			wantHdr: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "9", "X-RateLimit-Reset": unix(t0.Add(time.Minute)), "Retry-After": ""},
			want:    []middleware.Outcome{middleware.Allowed},
		},
		{
			name: "denied_answers_429_with_retry_after", d: denied,
			wantStatus: 429, wantNext: 0, wantCalls: 1,
			wantHdr: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(t0.Add(time.Minute)), "Retry-After": "45"},
			want:    []middleware.Outcome{middleware.Denied},
		},
		{
			name: "error_answers_500_without_detail", err: storeErr,
			wantStatus: 500, wantNext: 0, wantCalls: 1, wantBody: "Internal Server Error",
			wantHdr: limitHeaders,
			want:    []middleware.Outcome{middleware.Error},
		},
		{
			name: "fail_open_passes_on_error", err: storeErr, opts: []middleware.Option{middleware.WithFailOpen()},
			wantStatus: 200, wantNext: 1, wantCalls: 1, wantBody: "ok",
			wantHdr: limitHeaders,
			want:    []middleware.Outcome{middleware.Error}, wantFailOp: true,
		},
		{
			name: "fail_open_still_refuses_a_denial", d: denied, opts: []middleware.Option{middleware.WithFailOpen()},
			wantStatus: 429, wantNext: 0, wantCalls: 1,
			wantHdr: map[string]string{"Retry-After": "45"},
			want:    []middleware.Outcome{middleware.Denied},
		},
		{
			name: "shadow_passes_a_denial_with_headers_but_no_retry_after", d: denied, opts: []middleware.Option{middleware.WithShadow()},
			wantStatus: 200, wantNext: 1, wantCalls: 1, wantBody: "ok",
			wantHdr: map[string]string{"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": unix(t0.Add(time.Minute)), "Retry-After": ""},
			want:    []middleware.Outcome{middleware.ShadowDenied},
		},
		{
			name: "shadow_allowed_is_allowed", d: allowed, opts: []middleware.Option{middleware.WithShadow()},
			wantStatus: 200, wantNext: 1, wantCalls: 1,
			wantHdr: map[string]string{"X-RateLimit-Remaining": "9"},
			want:    []middleware.Outcome{middleware.Allowed},
		},
		{
			name: "shadow_error_is_still_an_error", err: storeErr, opts: []middleware.Option{middleware.WithShadow()},
			wantStatus: 500, wantNext: 0, wantCalls: 1,
			want: []middleware.Outcome{middleware.Error},
		},
		{
			name: "exempt_skips_the_limiter", d: denied, opts: []middleware.Option{middleware.WithExempt(byHeader)},
			hdr:        []string{"X-Health", "1"},
			wantStatus: 200, wantNext: 1, wantCalls: 0,
			wantHdr: limitHeaders,
		},
		{
			name: "not_exempt_is_limited", d: denied, opts: []middleware.Option{middleware.WithExempt(byHeader)},
			wantStatus: 429, wantNext: 0, wantCalls: 1,
			want: []middleware.Outcome{middleware.Denied},
		},
		{
			name: "unresolvable_remote_addr_answers_400", d: allowed, remoteAddr: "not-an-address",
			wantStatus: 400, wantNext: 0, wantCalls: 0, wantBody: "could not be identified",
			wantHdr: limitHeaders,
			want:    []middleware.Outcome{middleware.KeyError},
		},
		{
			name: "empty_key_answers_400", d: allowed, opts: []middleware.Option{middleware.WithKey(emptyKey)},
			wantStatus: 400, wantNext: 0, wantCalls: 0,
			want: []middleware.Outcome{middleware.KeyError},
		},
		{
			name: "custom_denied_handler_gets_headers_set", d: denied,
			opts: []middleware.Option{middleware.WithDeniedHandler(func(w http.ResponseWriter, _ *http.Request, d *limiter.Decision) {
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte("slow down, " + strconv.FormatInt(d.Limit, 10) + " per minute"))
			})},
			wantStatus: 429, wantNext: 0, wantCalls: 1, wantBody: "slow down, 10 per minute",
			wantHdr: map[string]string{"Retry-After": "45", "X-RateLimit-Remaining": "0"},
			want:    []middleware.Outcome{middleware.Denied},
		},
		{
			name: "custom_error_handler", err: storeErr,
			opts: []middleware.Option{middleware.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
				if !errors.Is(err, storeErr) {
					http.Error(w, "wrong error", http.StatusTeapot)
					return
				}
				http.Error(w, "try later", http.StatusServiceUnavailable)
			})},
			wantStatus: 503, wantNext: 0, wantCalls: 1, wantBody: "try later",
			want: []middleware.Outcome{middleware.Error},
		},
		{
			name: "custom_key_error_handler_sees_err_no_key", d: allowed, remoteAddr: "@",
			opts: []middleware.Option{middleware.WithKeyErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
				if !errors.Is(err, keyfunc.ErrNoKey) {
					http.Error(w, "wrong error", http.StatusTeapot)
					return
				}
				http.Error(w, "sign in", http.StatusUnauthorized)
			})},
			wantStatus: 401, wantNext: 0, wantCalls: 0, wantBody: "sign in",
			want: []middleware.Outcome{middleware.KeyError},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := &stubLimiter{policy: p, d: tt.d, err: tt.err}
			rec := &recorder{}
			next := &okHandler{}
			opts := append([]middleware.Option{middleware.WithObserver(rec.observe)}, tt.opts...)
			h := newMiddleware(t, lim, opts...)(next)
			addr := tt.remoteAddr
			if addr == "" {
				addr = "192.0.2.1:40000"
			}
			w := call(h, addr, tt.hdr...)
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", w.Code, tt.wantStatus, w.Body.String())
			}
			if got := next.count(); got != tt.wantNext {
				t.Errorf("next called %d times, want %d", got, tt.wantNext)
			}
			if got := lim.calls(); got != tt.wantCalls {
				t.Errorf("limiter asked %d times, want %d", got, tt.wantCalls)
			}
			if !strings.Contains(w.Body.String(), tt.wantBody) {
				t.Errorf("body = %q, want it to contain %q", w.Body.String(), tt.wantBody)
			}
			if strings.Contains(w.Body.String(), "10.9.8.7") || strings.Contains(w.Body.String(), "redisstore") {
				t.Errorf("body = %q leaks the store error", w.Body.String())
			}
			wantHeaders(t, w, tt.wantHdr)
			if got := rec.outcomes(); !equalOutcomes(got, tt.want) {
				t.Errorf("outcomes = %v, want %v", got, tt.want)
			}
			for _, e := range rec.events {
				if e.FailOpen != tt.wantFailOp {
					t.Errorf("event %v FailOpen = %v, want %v", e.Outcome, e.FailOpen, tt.wantFailOp)
				}
				if e.Policy != p {
					t.Errorf("event %v Policy = %v, want %v", e.Outcome, e.Policy, p)
				}
				if (e.Outcome == middleware.Error || e.Outcome == middleware.KeyError) != (e.Err != nil) {
					t.Errorf("event %v Err = %v", e.Outcome, e.Err)
				}
			}
			if lim.calls() > 0 && lim.keys[0] != "192.0.2.1" && tt.remoteAddr == "" {
				t.Errorf("key = %q, want the remote host key %q", lim.keys[0], "192.0.2.1")
			}
		})
	}
}

func equalOutcomes(a, b []middleware.Outcome) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestKeyErrorEventWrapsErrNoKey(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(10))
	rec := &recorder{}
	h := newMiddleware(t, &stubLimiter{policy: p},
		middleware.WithKey(func(*http.Request) (string, error) { return "", nil }),
		middleware.WithObserver(rec.observe))(&okHandler{})
	call(h, "192.0.2.1:1")
	if len(rec.events) != 1 || !errors.Is(rec.events[0].Err, keyfunc.ErrNoKey) {
		t.Fatalf("events = %+v, want one KeyError wrapping keyfunc.ErrNoKey", rec.events)
	}
}

func TestCostIsPassedToTheLimiter(t *testing.T) {
	clk := newFakeClock(t0)
	l := newLimiter(t, clk, "upload", limiter.PerMinute(10))
	cost := func(r *http.Request) int64 {
		n, _ := strconv.ParseInt(r.Header.Get("X-Cost"), 10, 64)
		return n
	}
	next := &okHandler{}
	h := newMiddleware(t, l, middleware.WithCost(cost))(next)
	tests := []struct {
		name, cost, wantRemaining string
		wantStatus                int
	}{
		{"cost_4", "4", "6", 200},
		{"cost_6_reaches_the_limit", "6", "0", 200},
		{"cost_1_over_the_limit", "1", "0", 429},
		{"cost_0_is_an_error", "0", "", 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := call(h, "192.0.2.1:1", "X-Cost", tt.cost)
			if w.Code != tt.wantStatus {
				t.Fatalf("cost %s: status = %d, want %d", tt.cost, w.Code, tt.wantStatus)
			}
			wantHeaders(t, w, map[string]string{"X-RateLimit-Remaining": tt.wantRemaining})
		})
	}
}

func TestPlansChooseTheLimits(t *testing.T) {
	clk := newFakeClock(t0)
	api := newLimiter(t, clk, "api", limiter.PerMinute(2))
	free, paid := &limiter.Plan{Name: "free"}, &limiter.Plan{Name: "paid", Limits: map[string][]int64{"api": {5}}}
	plan := func(r *http.Request) (*limiter.Plan, string, error) {
		if r.Header.Get("X-Plan") == "paid" {
			return paid, "", nil
		}
		return free, "", nil
	}
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := newMiddleware(t, api, middleware.WithKey(user), middleware.WithPlans(plan), middleware.WithObserver(rec.observe))(&okHandler{})
	tests := []struct {
		name, user, plan string
		wantAllowed      int
		wantLimit        string
		wantPolicy       string
	}{
		{"free_user_gets_2", "ann", "", 2, "2", "api"},
		{"paid_user_gets_5", "bob", "paid", 5, "5", "api"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			allowed := 0
			for range 8 {
				w := call(h, "192.0.2.1:1", "X-User", tt.user, "X-Plan", tt.plan)
				if w.Code == http.StatusOK {
					allowed++
				}
				wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": tt.wantLimit})
			}
			if allowed != tt.wantAllowed {
				t.Errorf("user %s plan %q: %d of 8 allowed, want %d", tt.user, tt.plan, allowed, tt.wantAllowed)
			}
			rec.mu.Lock()
			last := rec.events[len(rec.events)-1]
			rec.mu.Unlock()
			if last.Policy.Name() != tt.wantPolicy {
				t.Errorf("event policy = %s, want %s", last.Policy.Name(), tt.wantPolicy)
			}
		})
	}
}

// The doors share one admission (internal/verdict), whose outcomes the
// HTTP door converts by value: the two lists must stay in step.
func TestOutcomesAreTheSharedOnes(t *testing.T) {
	for _, tt := range []struct {
		door   middleware.Outcome
		shared verdict.Outcome
	}{
		{middleware.Allowed, verdict.Allowed}, {middleware.Denied, verdict.Denied},
		{middleware.ShadowDenied, verdict.ShadowDenied}, {middleware.Error, verdict.Error},
		{middleware.KeyError, verdict.KeyError}, {middleware.Misconfigured, verdict.Misconfigured},
		{middleware.Canceled, verdict.Canceled}, {middleware.Refunded, verdict.Refunded},
		{middleware.KeyFailed, verdict.KeyFailed}, {middleware.Released, verdict.Released},
		{middleware.Settled, verdict.Settled},
	} {
		if middleware.Outcome(tt.shared) != tt.door {
			t.Errorf("verdict's %d is middleware's %v, want %v", tt.shared, middleware.Outcome(tt.shared), tt.door)
		}
	}
}

// TestKeyResolvedOnce (issue 40): the middleware's key is resolved once
// per request, for WithExempt, every limit keyed by it (New's, a
// reported one's, a cap's) and the observer, which sees it as Event.Key;
// the exempt predicate gets it, and "" for a request it cannot identify.
func TestKeyResolvedOnce(t *testing.T) {
	clk := newFakeClock(t0)
	var calls atomic.Int32
	key := func(r *http.Request) (string, error) {
		calls.Add(1)
		if v := r.Header.Get("X-Client"); v != "" {
			return v, nil
		}
		return "", keyfunc.ErrNoKey
	}
	tl, err := limiter.New(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens"), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tl.Close() })
	f := limiter.MustInFlight("exports", 5)
	t.Cleanup(func() { _ = f.Close() })
	var exemptSaw []string
	rec := &recorder{}
	h := newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(100)), middleware.WithKey(key),
		middleware.WithReported(tl, nil, nil), middleware.WithInFlight(f, nil), middleware.WithObserver(rec.observe),
		middleware.WithExempt(func(r *http.Request, key string) bool {
			exemptSaw = append(exemptSaw, key)
			return r.URL.Path == "/healthz"
		}))(&okHandler{})
	if w := call(h, "192.0.2.1:1", "X-Client", "acme"); w.Code != http.StatusOK || calls.Load() != 1 {
		t.Fatalf("status %d, key resolved %d times; want 200, once", w.Code, calls.Load())
	}
	for _, e := range rec.events {
		if e.Key != "acme" {
			t.Fatalf("event %+v: key %q, want acme", e, e.Key)
		}
	}
	calls.Store(0)
	r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK || calls.Load() != 1 || !slices.Equal(exemptSaw, []string{"acme", ""}) {
		t.Fatalf("a health check without a key: %d, key resolved %d times, exempt saw %q; want 200, once, [acme \"\"]", w.Code, calls.Load(), exemptSaw)
	}
	if w := call(h, "192.0.2.1:1"); w.Code != http.StatusBadRequest {
		t.Fatalf("no key, not exempt: %d, want 400", w.Code)
	}
}
