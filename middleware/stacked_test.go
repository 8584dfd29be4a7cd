package middleware_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// Per-IP 5 a minute and per-user 3 a minute on one route: one set of
// headers, always the most restrictive decision.
func TestTwoLimitersOneSetOfHeaders(t *testing.T) {
	clk := newFakeClock(t0.Add(20 * time.Second))
	perIP := newLimiter(t, clk, "per-ip", limiter.PerMinute(5))
	perUser := newLimiter(t, clk, "per-user", limiter.PerMinute(3))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	next := &okHandler{}
	h := newMiddleware(t, perIP, middleware.WithLimiter(perUser, user), middleware.WithObserver(rec.observe))(next)
	reset := unix(t0.Add(time.Minute))
	const ip = "198.51.100.4:5555"
	steps := []struct {
		name, user  string
		wantStatus  int
		wantLimit   string
		wantRemain  string
		wantRetry   string
		wantOutcome []middleware.Outcome
	}{
		{"ann_1_user_is_tighter", "ann", 200, "3", "2", "", []middleware.Outcome{middleware.Allowed, middleware.Allowed}},
		{"ann_2", "ann", 200, "3", "1", "", []middleware.Outcome{middleware.Allowed, middleware.Allowed}},
		{"ann_3", "ann", 200, "3", "0", "", []middleware.Outcome{middleware.Allowed, middleware.Allowed}},
		{"ann_4_user_refuses", "ann", 429, "3", "0", "40", []middleware.Outcome{middleware.Allowed, middleware.Denied}},
		// The IP has spent 4 of 5 (ann's refusal by the user limit came
		// after the IP limit had charged): none is left after this
		// request, tighter than bob's 2.
		{"bob_1_ip_is_tighter", "bob", 200, "5", "0", "", []middleware.Outcome{middleware.Allowed, middleware.Allowed}},
		{"cat_1_ip_refuses_user_not_asked", "cat", 429, "5", "0", "40", []middleware.Outcome{middleware.Denied}},
		{"no_user_is_a_key_error_nothing_charged", "", 400, "", "", "", []middleware.Outcome{middleware.KeyError}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			rec.events = nil
			w := call(h, ip, "X-User", s.user)
			if w.Code != s.wantStatus {
				t.Fatalf("user %q: status = %d, want %d", s.user, w.Code, s.wantStatus)
			}
			wantHeaders(t, w, map[string]string{
				"X-RateLimit-Limit": s.wantLimit, "X-RateLimit-Remaining": s.wantRemain, "Retry-After": s.wantRetry,
			})
			if s.wantLimit != "" {
				wantHeaders(t, w, map[string]string{"X-RateLimit-Reset": reset})
			}
			if got := rec.outcomes(); !equalOutcomes(got, s.wantOutcome) {
				t.Errorf("outcomes = %v, want %v", got, s.wantOutcome)
			}
		})
	}
	// cat was refused by the IP limit before the user limit was asked, so
	// cat's budget is whole: a peek at one more request leaves 3 - 1.
	d, err := perUser.Peek(context.Background(), "hdr:cat", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || d.Remaining != 2 {
		t.Errorf("cat's user budget: peek allowed %v remaining %d, want true and 2 (never charged)", d.Allowed, d.Remaining)
	}
	if got := next.count(); got != 4 {
		t.Errorf("next called %d times, want 4", got)
	}
}

// In shadow mode, as when enforcing, the first refusal ends the decision:
// the limiters after it are not charged, and the headers describe that
// refusal, as the 429 would have, without Retry-After.
func TestTwoLimitersShadowStopsAtTheFirstRefusal(t *testing.T) {
	clk := newFakeClock(t0.Add(30 * time.Second))
	perSecond := newLimiter(t, clk, "burst", limiter.PerSecond(1))
	perMinute := newLimiter(t, clk, "steady", limiter.PerMinute(2))
	all := func(*http.Request) (string, error) { return "everyone", nil }
	rec := &recorder{}
	h := newMiddleware(t, perSecond, middleware.WithKey(all), middleware.WithLimiter(perMinute, all),
		middleware.WithShadow(), middleware.WithObserver(rec.observe))(&okHandler{})
	call(h, "192.0.2.1:1")
	rec.events = nil
	w := call(h, "192.0.2.1:1")
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200 in shadow mode", w.Code)
	}
	wantHeaders(t, w, map[string]string{
		"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset": unix(t0.Add(31 * time.Second)), "Retry-After": "",
	})
	want := []middleware.Outcome{middleware.ShadowDenied}
	if got := rec.outcomes(); !equalOutcomes(got, want) {
		t.Errorf("outcomes = %v, want %v", got, want)
	}
	d, err := perMinute.Peek(context.Background(), "everyone", 1)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed || d.Remaining != 0 {
		t.Errorf("steady after one admitted and one shadow-refused request: peek allowed %v remaining %d, want true and 0 (charged once)", d.Allowed, d.Remaining)
	}
}

// TestShadowChargesWhatEnforcingCharges sends one sequence through an
// enforcing and a shadow middleware, each with its own per-IP and
// per-user limiters: after every request both have the same outcomes
// (Denied in one is ShadowDenied in the other) and the same counts.
func TestShadowChargesWhatEnforcingCharges(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	type side struct {
		perIP, perUser *limiter.Limiter
		rec            *recorder
		h              http.Handler
	}
	mk := func(opts ...middleware.Option) *side {
		s := &side{
			perIP:   newLimiter(t, clk, "per-ip", limiter.PerMinute(4)),
			perUser: newLimiter(t, clk, "per-user", limiter.PerMinute(2)),
			rec:     &recorder{},
		}
		opts = append(opts, middleware.WithLimiter(s.perUser, user), middleware.WithObserver(s.rec.observe))
		s.h = newMiddleware(t, s.perIP, opts...)(&okHandler{})
		return s
	}
	enforce, shadow := mk(), mk(middleware.WithShadow())
	users := []string{"ann", "ann", "ann", "bob", "bob", "cat", "ann", "dan"}
	for i, u := range users {
		enforce.rec.events, shadow.rec.events = nil, nil
		call(enforce.h, "198.51.100.4:1", "X-User", u)
		call(shadow.h, "198.51.100.4:1", "X-User", u)
		got := shadow.rec.outcomes()
		want := enforce.rec.outcomes()
		for j := range want {
			if want[j] == middleware.Denied {
				want[j] = middleware.ShadowDenied
			}
		}
		if !equalOutcomes(got, want) {
			t.Fatalf("request %d (%s): shadow outcomes %v, enforcing %v", i+1, u, got, enforce.rec.outcomes())
		}
		for _, k := range []struct {
			name string
			lim  func(*side) *limiter.Limiter
			key  string
		}{
			{"per-ip", func(s *side) *limiter.Limiter { return s.perIP }, "198.51.100.4"},
			{"per-user", func(s *side) *limiter.Limiter { return s.perUser }, "hdr:X-User:" + u},
		} {
			de, err := k.lim(enforce).Peek(context.Background(), k.key, 1)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := k.lim(shadow).Peek(context.Background(), k.key, 1)
			if err != nil {
				t.Fatal(err)
			}
			if de.Remaining != ds.Remaining || de.Allowed != ds.Allowed {
				t.Fatalf("request %d (%s): %s %q: shadow remaining %d, enforcing %d", i+1, u, k.name, k.key, ds.Remaining, de.Remaining)
			}
		}
	}
	// The keys peeked above are the ones charged: ann spent her two.
	if d, err := shadow.perUser.Peek(context.Background(), "hdr:X-User:ann", 1); err != nil || d.Allowed {
		t.Fatalf("ann's per-user budget: peek %+v, %v; want refused", d, err)
	}
}

// With fail-open, a limiter that fails is skipped and the others still
// decide.
func TestTwoLimitersFailOpenSkipsTheFailingOne(t *testing.T) {
	clk := newFakeClock(t0)
	ok := newLimiter(t, clk, "ok", limiter.PerMinute(2))
	broken := &stubLimiter{policy: limiter.MustPolicy("broken", limiter.PerMinute(100)), err: limiter.ErrClosed}
	h := newMiddleware(t, broken, middleware.WithLimiter(ok, mustRemoteHost(t)), middleware.WithFailOpen())(&okHandler{})
	for i, want := range []int{200, 200, 429} {
		w := call(h, "192.0.2.1:1")
		if w.Code != want {
			t.Errorf("request %d: status = %d, want %d", i+1, w.Code, want)
		}
	}
}

func mustRemoteHost(t *testing.T) keyfunc.Func {
	t.Helper()
	k, err := keyfunc.RemoteHost()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Two middlewares stacked: one set of headers, describing the tighter
// limit whichever middleware applies it. Before issue 16 the inner one's
// values won (Limit 100, Remaining 99) even with the outer limit spent;
// TestStackedHeaders covers the cases.
func TestStackedMiddlewaresOneSetOfHeaders(t *testing.T) {
	clk := newFakeClock(t0)
	outer := newLimiter(t, clk, "outer", limiter.PerMinute(1))
	inner := newLimiter(t, clk, "inner", limiter.PerMinute(100))
	h := newMiddleware(t, outer)(newMiddleware(t, inner)(&okHandler{}))
	w := call(h, "192.0.2.1:1")
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d, want 200", w.Code)
	}
	wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": "1", "X-RateLimit-Remaining": "0"})
}
