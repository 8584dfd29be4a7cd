package middleware_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// clockedStub is a custom Limiter with a clock of its own, as a wrapper
// of *limiter.Limiter would have: it answers d at whatever instant, and
// records the instants AllowAt was given.
type clockedStub struct {
	*stubLimiter
	clk *limitertest.Clock
	at  []time.Time
}

func (s *clockedStub) Clock() limiter.Clock { return s.clk }

func (s *clockedStub) AllowAt(ctx context.Context, key string, cost int64, now time.Time) (limiter.Decision, error) {
	s.at = append(s.at, now)
	return s.Allow(ctx, key, cost)
}

// TestCustomLimiterDraftHeaders: a custom Limiter's Decisions were not made
// by limiter.Decide and carry no instant. The draft t must still be the
// seconds until the reset, dated by the limiter's clock (or, for a Limiter
// without one, the system clock), never the reset's Unix time
// ("custom";r=7;t=1767225660 before), and listing every window must not compute
// windows from 1970 ("custom";r=0;t=60 before).
func TestCustomLimiterDraftHeaders(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := limiter.MustPolicy("custom", limiter.PerMinute(10))
	allowed := func(now time.Time) limiter.Decision {
		return limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: now.Add(time.Minute), Window: time.Minute, Policy: p}
	}
	denied := func(now time.Time) limiter.Decision {
		return limiter.Decision{Limit: 10, ResetAt: now.Add(20 * time.Second), RetryAfter: 20 * time.Second, Window: time.Minute, Policy: p}
	}
	tests := []struct {
		name      string
		opts      []headers.Option
		d         func(time.Time) limiter.Decision
		code      int
		rateLimit string
	}{
		{"allowed", nil, allowed, http.StatusOK, `"custom";r=7;t=60`},
		{"allowed_every_window", nil, allowed, http.StatusOK, `"custom";r=7;t=60`},
		{"denied", nil, denied, http.StatusTooManyRequests, `"custom";r=0;t=20`},
	}
	for _, tt := range tests {
		hw, err := headers.New(append([]headers.Option{headers.WithDraftHeaders()}, tt.opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(tt.name+"/limiter_clock", func(t *testing.T) {
			l := &clockedStub{stubLimiter: &stubLimiter{policy: p, d: tt.d(at)}, clk: limitertest.New(at)}
			h := newMiddleware(t, l, middleware.WithHeaders(hw))(&okHandler{})
			res := call(h, "192.0.2.1:1")
			if res.Code != tt.code {
				t.Fatalf("status %d, want %d", res.Code, tt.code)
			}
			if got := res.Header().Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("RateLimit = %q, want %q (the limiter's clock reads %v)", got, tt.rateLimit, at)
			}
			if len(l.at) != 1 || !l.at[0].Equal(at) {
				t.Fatalf("AllowAt instants %v, want one, the clock's %v", l.at, at)
			}
		})
		t.Run(tt.name+"/system_clock", func(t *testing.T) {
			// A Limiter without a clock: its decision is relative to the
			// wall clock, and so is t, give or take the second the test
			// may cross.
			l := &stubLimiter{policy: p, d: tt.d(time.Now())}
			h := newMiddleware(t, l, middleware.WithHeaders(hw))(&okHandler{})
			res := call(h, "192.0.2.1:1")
			if res.Code != tt.code {
				t.Fatalf("status %d, want %d", res.Code, tt.code)
			}
			want := tt.rateLimit
			earlier := want[:len(want)-2] + map[string]string{"60": "59", "20": "19"}[want[len(want)-2:]]
			if got := res.Header().Get("RateLimit"); got != want && got != earlier {
				t.Fatalf("RateLimit = %q, want %q or %q", got, want, earlier)
			}
		})
	}
}

// TestMiddlewareReadsTheLimitersClockOnce: the middleware decides at one
// reading of the limiter's clock, and times the decision by that clock, so
// a test's fake clock governs the observer's Duration too.
func TestMiddlewareReadsTheLimitersClockOnce(t *testing.T) {
	clk := &countingClock{c: limitertest.New(time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(5)), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var events []middleware.Event
	plain := newMiddleware(t, l)(&okHandler{})
	observed := newMiddleware(t, l, middleware.WithObserver(func(e middleware.Event) { events = append(events, e) }))(&okHandler{})

	call(plain, "192.0.2.1:1")
	if clk.reads != 1 {
		t.Fatalf("clock read %d times for one request, want 1", clk.reads)
	}
	call(observed, "192.0.2.1:1")
	if clk.reads != 3 {
		t.Fatalf("clock read %d times for an observed request, want 2 (decision, end of timing)", clk.reads-1)
	}
	if len(events) != 1 || events[0].Duration != time.Millisecond {
		t.Fatalf("events %+v, want one of Duration 1ms (the fake clock steps 1ms a reading)", events)
	}
}

// countingClock counts its readings and steps 1ms after each.
type countingClock struct {
	c     *limitertest.Clock
	reads int
}

func (c *countingClock) Now() time.Time {
	c.reads++
	now := c.c.Now()
	c.c.Advance(time.Millisecond)
	return now
}
