package middleware_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// seen is a handler that records what DecisionFrom tells it.
type seen struct {
	d  limiter.Decision
	ok bool
}

func (s *seen) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.d, s.ok = middleware.DecisionFrom(r.Context())
}

func TestDecisionFrom(t *testing.T) {
	clk := newFakeClock(t0.Add(20 * time.Second))
	user, err := keyfunc.Header("X-User")
	if err != nil {
		t.Fatal(err)
	}
	health := func(r *http.Request, _ string) bool { return r.URL.Path == "/healthz" }
	tests := []struct {
		name       string
		mw         func(t *testing.T) func(http.Handler) http.Handler
		hdr        []string
		path       string
		wantOK     bool
		wantLimit  int64
		wantRemain int64
		wantPolicy string
	}{
		{"one_limiter", func(t *testing.T) func(http.Handler) http.Handler {
			return newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(10)))
		}, nil, "/x", true, 10, 9, "api"},
		{"the_tighter_of_two_limiters", func(t *testing.T) func(http.Handler) http.Handler {
			return newMiddleware(t, newLimiter(t, clk, "per-ip", limiter.PerMinute(10)),
				middleware.WithLimiter(newLimiter(t, clk, "per-user", limiter.PerMinute(3)), user))
		}, []string{"X-User", "ann"}, "/x", true, 3, 2, "per-user"},
		{"shadow_refusal_reads_as_the_headers_say", func(t *testing.T) func(http.Handler) http.Handler {
			l := newLimiter(t, clk, "rollout", limiter.PerMinute(1))
			if _, err := l.Allow(context.Background(), "192.0.2.1", 1); err != nil {
				t.Fatal(err)
			}
			return newMiddleware(t, l, middleware.WithShadow())
		}, nil, "/x", true, 1, 0, "rollout"},
		{"exempt_is_outside", func(t *testing.T) func(http.Handler) http.Handler {
			return newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(10)), middleware.WithExempt(health))
		}, nil, "/healthz", false, 0, 0, ""},
		{"fail_open_decided_nothing", func(t *testing.T) func(http.Handler) http.Handler {
			return newMiddleware(t, &stubLimiter{policy: limiter.MustPolicy("broken", limiter.PerMinute(1)), err: limiter.ErrClosed}, middleware.WithFailOpen())
		}, nil, "/x", false, 0, 0, ""},
		{"custom_decision_gets_the_limiters_policy", func(t *testing.T) func(http.Handler) http.Handler {
			return newMiddleware(t, &stubLimiter{policy: limiter.MustPolicy("custom", limiter.PerMinute(5)),
				d: limiter.Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAt: t0.Add(time.Minute), Window: time.Minute}})
		}, nil, "/x", true, 5, 4, "custom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &seen{}
			h := tt.mw(t)(s)
			r := httptest.NewRequest(http.MethodGet, tt.path, nil)
			r.RemoteAddr = "192.0.2.1:1"
			for i := 0; i+1 < len(tt.hdr); i += 2 {
				r.Header.Set(tt.hdr[i], tt.hdr[i+1])
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if s.ok != tt.wantOK {
				t.Fatalf("DecisionFrom ok = %v, want %v", s.ok, tt.wantOK)
			}
			if !tt.wantOK {
				return
			}
			if !s.d.Allowed || s.d.RetryAfter != 0 || s.d.Limit != tt.wantLimit || s.d.Remaining != tt.wantRemain || s.d.Policy == nil || s.d.Policy.Name() != tt.wantPolicy {
				t.Fatalf("DecisionFrom = %+v, want allowed, limit %d, remaining %d, policy %s", s.d, tt.wantLimit, tt.wantRemain, tt.wantPolicy)
			}
			// The headers describe the same decision.
			wantHeaders(t, w, map[string]string{"X-RateLimit-Limit": itoa(tt.wantLimit), "X-RateLimit-Remaining": itoa(tt.wantRemain), "Retry-After": ""})
		})
	}
}

func TestDecisionFromOutsideTheMiddleware(t *testing.T) {
	if d, ok := middleware.DecisionFrom(context.Background()); ok {
		t.Fatalf("DecisionFrom(Background) = %+v, true; want false", d)
	}
}

// DecisionFrom costs the handler nothing.
func TestDecisionFromAllocatesNothing(t *testing.T) {
	clk := newFakeClock(t0)
	var allocs float64
	h := newMiddleware(t, newLimiter(t, clk, "api", limiter.PerMinute(1_000_000)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		allocs = testing.AllocsPerRun(100, func() {
			if _, ok := middleware.DecisionFrom(r.Context()); !ok {
				t.Error("no decision")
			}
		})
	}))
	call(h, "192.0.2.1:1")
	if allocs != 0 {
		t.Fatalf("DecisionFrom: %v allocations, want 0", allocs)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
