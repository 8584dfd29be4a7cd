package middleware_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	chimw "github.com/go-chi/chi/v5/middleware"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/keyfunc/chikey"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// TestMisconfiguredKeyIs500: a key function the server installed where it
// cannot work answers 500 and tells the observer what is wrong; a client
// that cannot be identified still gets 400.
func TestMisconfiguredKeyIs500(t *testing.T) {
	clk := newFakeClock(t0)
	apiKey, err := keyfunc.Header("X-Api-Key")
	if err != nil {
		t.Fatal(err)
	}
	chiIP, err := chikey.ClientIP()
	if err != nil {
		t.Fatal(err)
	}
	route := keyfunc.RoutePattern()
	// A key function of the user's own whose backend is down: not the
	// client's fault.
	dbDown := func(*http.Request) (string, error) { return "", errors.New("tenant lookup: db down") }
	tests := []struct {
		name        string
		route       func(mw func(http.Handler) http.Handler) http.Handler
		key         keyfunc.Func
		opts        []middleware.Option
		wantStatus  int
		wantOutcome middleware.Outcome
		wantErrText string
	}{
		// Around a ServeMux no router has said which route serves the
		// request. (In chi's root r.Use the route key now works.)
		{"route_pattern_around_servemux", func(mw func(http.Handler) http.Handler) http.Handler {
			m := http.NewServeMux()
			m.Handle("GET /{id}", &okHandler{})
			return mw(m)
		}, route, nil, 500, middleware.Misconfigured, "no route pattern"},
		{"route_pattern_fail_open_still_500", func(mw func(http.Handler) http.Handler) http.Handler {
			m := http.NewServeMux()
			m.Handle("GET /{id}", &okHandler{})
			return mw(m)
		}, route, []middleware.Option{middleware.WithFailOpen()}, 500, middleware.Misconfigured, "no route pattern"},
		{"route_pattern_on_chi_root_use_works", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(mw)
			r.Get("/{id}", (&okHandler{}).ServeHTTP)
			return r
		}, route, nil, 200, middleware.Allowed, ""},
		{"route_pattern_on_the_route_works", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.With(mw).Get("/{id}", (&okHandler{}).ServeHTTP)
			return r
		}, route, nil, 200, middleware.Allowed, ""},
		{"chikey_without_client_ip_middleware", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.With(mw).Get("/{id}", (&okHandler{}).ServeHTTP)
			return r
		}, chiIP, nil, 500, middleware.Misconfigured, "ClientIPFrom*"},
		{"chikey_with_client_ip_middleware", func(mw func(http.Handler) http.Handler) http.Handler {
			r := chi.NewRouter()
			r.Use(chimw.ClientIPFromRemoteAddr)
			r.With(mw).Get("/{id}", (&okHandler{}).ServeHTTP)
			return r
		}, chiIP, nil, 200, middleware.Allowed, ""},
		{"no_api_key_is_the_clients_400", func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(&okHandler{})
		}, apiKey, nil, 400, middleware.KeyError, "no X-Api-Key header"},
		{"key_lookup_failing_is_the_servers_500", func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(&okHandler{})
		}, dbDown, nil, 500, middleware.KeyFailed, "db down"},
		{"key_lookup_failing_fail_open_still_500", func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(&okHandler{})
		}, dbDown, []middleware.Option{middleware.WithFailOpen()}, 500, middleware.KeyFailed, "db down"},
		{"key_lookup_no_such_key_is_the_clients_400", func(mw func(http.Handler) http.Handler) http.Handler {
			return mw(&okHandler{})
		}, func(*http.Request) (string, error) {
			return "", fmt.Errorf("tenant lookup: unknown API key: %w", keyfunc.ErrNoKey)
		}, nil, 400, middleware.KeyError, "unknown API key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{}
			opts := append([]middleware.Option{middleware.WithKey(tt.key), middleware.WithObserver(rec.observe)}, tt.opts...)
			h := tt.route(newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(5)), opts...))
			w := call(h, "192.0.2.1:1")
			if w.Code != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %q)", w.Code, tt.wantStatus, w.Body.String())
			}
			if len(rec.events) != 1 || rec.events[0].Outcome != tt.wantOutcome {
				t.Fatalf("events %+v, want one %v", rec.events, tt.wantOutcome)
			}
			e := rec.events[0]
			if tt.wantErrText == "" {
				return
			}
			if !strings.Contains(e.Err.Error(), tt.wantErrText) {
				t.Errorf("event error %q, want it to say %q", e.Err, tt.wantErrText)
			}
			if got, want := errors.Is(e.Err, keyfunc.ErrMisconfigured), tt.wantOutcome == middleware.Misconfigured; got != want {
				t.Errorf("event error %v wraps keyfunc.ErrMisconfigured %v, want %v", e.Err, got, want)
			}
			if strings.Contains(w.Body.String(), tt.wantErrText) {
				t.Errorf("body %q tells the client the server's internals", w.Body.String())
			}
		})
	}
}

// The error handler sees what is misconfigured, and may answer otherwise.
func TestMisconfiguredGoesToTheErrorHandler(t *testing.T) {
	var got error
	route := keyfunc.RoutePattern()
	h := newMiddleware(t, newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(5)),
		middleware.WithKey(route),
		middleware.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
			got = err
			http.Error(w, "down", http.StatusServiceUnavailable)
		}))(&okHandler{})
	if w := call(h, "192.0.2.1:1"); w.Code != http.StatusServiceUnavailable || !errors.Is(got, keyfunc.ErrMisconfigured) {
		t.Fatalf("status %d, error %v; want the error handler's 503 with an error wrapping ErrMisconfigured", w.Code, got)
	}
}

// TestClientGoneIsNotAdmitted: a request whose context is done when the
// limiter fails is no store failure: fail-open does not let it through,
// nothing is charged, the handler never runs, and the answer is 499.
func TestClientGoneIsNotAdmitted(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(100))
	tests := []struct {
		name string
		lim  func(t *testing.T) middleware.Limiter
		opts []middleware.Option
	}{
		{"fail_open_real_limiter", func(t *testing.T) middleware.Limiter {
			return newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(100))
		}, []middleware.Option{middleware.WithFailOpen()}},
		{"fail_closed_real_limiter", func(t *testing.T) middleware.Limiter {
			return newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(100))
		}, nil},
		{"fail_open_store_error_after_the_client_left", func(t *testing.T) middleware.Limiter {
			return &stubLimiter{policy: p, err: errors.New("redisstore: read tcp: use of closed network connection")}
		}, []middleware.Option{middleware.WithFailOpen()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lim := tt.lim(t)
			rec := &recorder{}
			next := &okHandler{}
			h := newMiddleware(t, lim, append([]middleware.Option{middleware.WithObserver(rec.observe)}, tt.opts...)...)(next)
			for range 50 {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/x", nil)
				r.RemoteAddr = "192.0.2.1:1"
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != 499 {
					t.Fatalf("status %d, want 499", w.Code)
				}
				if w.Body.Len() != 0 {
					t.Fatalf("body %q, want none", w.Body.String())
				}
			}
			if n := next.count(); n != 0 {
				t.Fatalf("handler ran for %d of 50 requests whose client had left, want 0", n)
			}
			for _, e := range rec.events {
				if e.Outcome != middleware.Canceled || e.FailOpen || e.Err == nil {
					t.Fatalf("event %v FailOpen %v Err %v, want Canceled, not fail-open, with the error", e.Outcome, e.FailOpen, e.Err)
				}
			}
			if l, ok := lim.(*limiter.Limiter); ok {
				d, err := l.Peek(context.Background(), "192.0.2.1", 1)
				if err != nil || d.Remaining != 99 {
					t.Fatalf("peek after 50 cancelled requests: %+v, %v; want 99 remaining, nothing charged", d, err)
				}
			}
		})
	}
}

// A store that fails while the client is still there fails open as
// before.
func TestFailOpenStillPassesALiveRequest(t *testing.T) {
	lim := &stubLimiter{policy: limiter.MustPolicy("api", limiter.PerMinute(1)), err: errors.New("redisstore: dial tcp: connection refused")}
	next := &okHandler{}
	h := newMiddleware(t, lim, middleware.WithFailOpen())(next)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	r := httptest.NewRequestWithContext(ctx, http.MethodGet, "/x", nil)
	r.RemoteAddr = "192.0.2.1:1"
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || next.count() != 1 {
		t.Fatalf("status %d, handler ran %d times; want 200 and once", w.Code, next.count())
	}
}

// TestPlanThatCannotApplyIs500: a lookup whose plan cannot apply (none,
// for a plan nobody declared; limits of another count than the policy's
// rates, or out of range; a cap below 1; a zone the tz database does not
// have) is the server's mistake: 500 by the error handler, reported as
// Misconfigured with an error wrapping ErrMisconfigured, never a
// refusal or an admission, and never the error's text to the client.
func TestPlanThatCannotApplyIs500(t *testing.T) {
	clk := newFakeClock(t0)
	base := newLimiter(t, clk, "plan", limiter.PerMinute(5))
	exports := limiter.MustInFlight("exports", 2)
	t.Cleanup(func() { exports.Close() })
	plans := map[string]*limiter.Plan{
		"":          {Name: "free"},
		"pro":       {Name: "pro", Limits: map[string][]int64{"plan": {50}}},
		"two":       {Name: "two", Limits: map[string][]int64{"plan": {50, 5}}},
		"huge":      {Name: "huge", Limits: map[string][]int64{"plan": {limiter.MaxLimit + 1}}},
		"no-export": {Name: "no-export", Caps: map[string]int64{"exports": 0}},
	}
	rec := &recorder{}
	h := newMiddleware(t, base, middleware.WithObserver(rec.observe), middleware.WithInFlight(exports, nil),
		middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
			return plans[r.Header.Get("X-Plan")], r.Header.Get("X-Zone"), nil // nil for a plan nobody declared
		}))(&okHandler{})
	for _, tt := range []struct {
		plan, zone string
		status     int
		outcome    middleware.Outcome
		limit      string
		misconfig  bool
	}{
		{"", "", 200, middleware.Allowed, "5", false},
		{"pro", "", 200, middleware.Allowed, "50", false},
		{"enterprise", "", 500, middleware.Misconfigured, "", true},
		{"two", "", 500, middleware.Misconfigured, "", true},
		{"huge", "", 500, middleware.Misconfigured, "", true},
		{"no-export", "", 500, middleware.Misconfigured, "", true},
		{"pro", "Mars/Olympus_Mons", 500, middleware.Misconfigured, "", true},
		{"pro", "../../etc/passwd", 500, middleware.Misconfigured, "", true},
	} {
		rec.events = nil
		r := httptest.NewRequest(http.MethodGet, "/x", nil)
		r.RemoteAddr = "192.0.2.1:1"
		r.Header.Set("X-Plan", tt.plan)
		r.Header.Set("X-Zone", tt.zone)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != tt.status || w.Header().Get("X-RateLimit-Limit") != tt.limit {
			t.Fatalf("plan %q: status %d, limit %q; want %d, %q", tt.plan, w.Code, w.Header().Get("X-RateLimit-Limit"), tt.status, tt.limit)
		}
		want := 1 // the misconfiguration's
		if !tt.misconfig {
			want = 3 // the rate's, the cap's and the slot's release
		}
		if len(rec.events) != want || rec.events[0].Outcome != tt.outcome || errors.Is(rec.events[0].Err, middleware.ErrMisconfigured) != tt.misconfig {
			t.Fatalf("plan %q zone %q: events %+v, want %d, the first %v (ErrMisconfigured %v)", tt.plan, tt.zone, rec.events, want, tt.outcome, tt.misconfig)
		}
		named := "plan <nil>" // a plan nobody declared
		if p := plans[tt.plan]; p != nil {
			named = fmt.Sprintf("plan %q, zone %q", p.Name, tt.zone)
		}
		if e := rec.events[0]; tt.misconfig && (!strings.Contains(e.Err.Error(), named) || e.Policy != base.Policy()) {
			t.Fatalf("plan %q zone %q: %+v, want the error to say %s, under %q", tt.plan, tt.zone, e, named, base.Policy().Name())
		}
		if tt.misconfig && strings.Contains(w.Body.String(), "plan") {
			t.Fatalf("body %q tells the client the server's internals", w.Body.String())
		}
	}
}

// A plan lookup that failed takes the failure policy, as for a store
// that failed: 500 by the error handler, or through with WithFailOpen,
// charged nothing either way; the observer sees Error under New's
// limiter's policy, with the lookup's error.
func TestPlanLookupFailureTakesTheFailurePolicy(t *testing.T) {
	dbDown := errors.New("plans: connection refused")
	for _, failOpen := range []bool{false, true} {
		clk := newFakeClock(t0)
		base := newLimiter(t, clk, "plan", limiter.PerMinute(5))
		rec := &recorder{}
		opts := []middleware.Option{middleware.WithObserver(rec.observe), middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) {
			return nil, "", dbDown
		})}
		want := http.StatusInternalServerError
		if failOpen {
			opts, want = append(opts, middleware.WithFailOpen()), http.StatusOK
		}
		h := newMiddleware(t, base, opts...)(&okHandler{})
		w := call(h, "192.0.2.1:1")
		if w.Code != want || strings.Contains(w.Body.String(), "refused") {
			t.Fatalf("fail open %v: %d %q, want %d without the error's text", failOpen, w.Code, w.Body, want)
		}
		if len(rec.events) != 1 || rec.events[0].Outcome != middleware.Error || !errors.Is(rec.events[0].Err, dbDown) ||
			rec.events[0].Policy != base.Policy() || rec.events[0].FailOpen != failOpen {
			t.Fatalf("fail open %v: events %+v, want one Error under %q with the lookup's error", failOpen, rec.events, base.Policy().Name())
		}
		if u, err := base.Usage(context.Background(), "192.0.2.1"); err != nil || u.Windows[0].Used != 0 {
			t.Fatalf("fail open %v: usage %+v, %v; want nothing charged", failOpen, u, err)
		}
	}
}

// TestPlansNeedLimiters: a plan's limits are derived by
// limiter.Limiter.For, so New refuses WithPlans beside a limiter of
// another type; and a plan resolved once its limiters are closed is a
// failure (500, Error), as their decisions are, not the server's mistake.
func TestPlansNeedLimiters(t *testing.T) {
	stub := &stubLimiter{policy: limiter.MustPolicy("custom", limiter.PerMinute(5))}
	lookup := middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) { return &limiter.Plan{Name: "free"}, "", nil })
	if _, err := middleware.New(stub, lookup); !errors.Is(err, middleware.ErrInvalidOption) || !strings.Contains(err.Error(), "*limiter.Limiter") {
		t.Fatalf("New(a custom limiter, WithPlans): %v, want ErrInvalidOption naming *limiter.Limiter", err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(5)))
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	h := newMiddleware(t, l, lookup, middleware.WithObserver(rec.observe))(&okHandler{})
	_ = l.Close()
	if w := call(h, "192.0.2.1:1"); w.Code != http.StatusInternalServerError || len(rec.events) != 1 ||
		rec.events[0].Outcome != middleware.Error || !errors.Is(rec.events[0].Err, limiter.ErrClosed) {
		t.Fatalf("closed: %d, events %+v; want 500 and one Error wrapping ErrClosed", w.Code, rec.events)
	}
}

// TestPlanLookupWithoutACustomer: a lookup that finds no customer to
// look up says so with keyfunc.ErrNoKey, answered as a key function's
// (400, KeyError), never the failure policy, which WithFailOpen would
// turn into a pass; keyfunc.ErrMisconfigured is a 500, Misconfigured.
func TestPlanLookupWithoutACustomer(t *testing.T) {
	for _, tt := range []struct {
		err     error
		status  int
		outcome middleware.Outcome
	}{
		{fmt.Errorf("no customer for this API key: %w", keyfunc.ErrNoKey), http.StatusBadRequest, middleware.KeyError},
		{fmt.Errorf("plans table not loaded: %w", keyfunc.ErrMisconfigured), http.StatusInternalServerError, middleware.Misconfigured},
	} {
		l := newLimiter(t, newFakeClock(t0), "api", limiter.PerMinute(5))
		rec := &recorder{}
		h := newMiddleware(t, l, middleware.WithFailOpen(), middleware.WithObserver(rec.observe),
			middleware.WithPlans(func(*http.Request) (*limiter.Plan, string, error) { return nil, "", tt.err }))(&okHandler{})
		w := call(h, "192.0.2.1:1")
		if w.Code != tt.status || len(rec.events) != 1 || rec.events[0].Outcome != tt.outcome || !errors.Is(rec.events[0].Err, tt.err) {
			t.Fatalf("%v: %d, events %+v; want %d and one %v", tt.err, w.Code, rec.events, tt.status, tt.outcome)
		}
		if u, err := l.Usage(context.Background(), "192.0.2.1"); err != nil || u.Windows[0].Used != 0 {
			t.Fatalf("%v: usage %+v, %v; want nothing charged", tt.err, u, err)
		}
	}
}
