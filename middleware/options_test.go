package middleware_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

func TestNewRejectsBadConfiguration(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(10))
	ok := &stubLimiter{policy: p}
	noPolicy := &stubLimiter{}
	key := mustRemoteHost(t)
	tests := []struct {
		name     string
		l        middleware.Limiter
		opts     []middleware.Option
		wantText string
	}{
		{"nil_limiter", nil, nil, "limiter is nil"},
		// What limiter.New returns beside an error that was dropped.
		{"typed_nil_limiter", (*limiter.Limiter)(nil), nil, "limiter is a nil *limiter.Limiter"},
		{"typed_nil_extra_limiter", ok, []middleware.Option{middleware.WithLimiter((*limiter.Limiter)(nil), key)}, "WithLimiter (limiter 1): limiter is a nil *limiter.Limiter"},
		{"limiter_without_policy", noPolicy, nil, "no policy"},
		{"nil_option", ok, []middleware.Option{nil}, "nil Option"},
		{"nil_key", ok, []middleware.Option{middleware.WithKey(nil)}, "WithKey"},
		{"nil_cost", ok, []middleware.Option{middleware.WithCost(nil)}, "WithCost"},
		{"nil_lookup", ok, []middleware.Option{middleware.WithPlans(nil)}, "WithPlans"},
		{"nil_exempt", ok, []middleware.Option{middleware.WithExempt(nil)}, "WithExempt"},
		{"nil_denied_handler", ok, []middleware.Option{middleware.WithDeniedHandler(nil)}, "WithDeniedHandler"},
		{"nil_error_handler", ok, []middleware.Option{middleware.WithErrorHandler(nil)}, "WithErrorHandler"},
		{"nil_key_error_handler", ok, []middleware.Option{middleware.WithKeyErrorHandler(nil)}, "WithKeyErrorHandler"},
		{"nil_observer", ok, []middleware.Option{middleware.WithObserver(nil)}, "WithObserver"},
		{"nil_headers", ok, []middleware.Option{middleware.WithHeaders(nil)}, "WithHeaders"},
		{"extra_limiter_nil", ok, []middleware.Option{middleware.WithLimiter(nil, key)}, "WithLimiter"},
		{"extra_limiter_without_policy", ok, []middleware.Option{middleware.WithLimiter(noPolicy, key)}, "WithLimiter"},
		{"extra_limiter_nil_key", ok, []middleware.Option{middleware.WithLimiter(ok, nil)}, "WithLimiter"},
		{"nil_count_if", ok, []middleware.Option{middleware.WithCountIf(nil)}, "WithCountIf"},
		// An option that cannot apply is refused, not ignored.
		{"denied_handler_under_shadow", ok, []middleware.Option{
			middleware.WithShadow(),
			middleware.WithDeniedHandler(func(http.ResponseWriter, *http.Request, *limiter.Decision) {}),
		}, "WithDeniedHandler does not apply under WithShadow"},
		{"too_many_limiters", ok, []middleware.Option{
			middleware.WithLimiter(ok, key), middleware.WithLimiter(ok, key),
			middleware.WithLimiter(ok, key), middleware.WithLimiter(ok, key),
		}, "5 limiters, at most 4"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mw, err := middleware.New(tt.l, tt.opts...)
			if err == nil {
				t.Fatalf("New returned no error (middleware %p); want one", mw)
			}
			if !errors.Is(err, middleware.ErrInvalidOption) {
				t.Errorf("New error = %v, want it to wrap ErrInvalidOption", err)
			}
			if !strings.HasPrefix(err.Error(), "middleware: ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("New error = %q, want it to start with %q and mention %q", err, "middleware: ", tt.wantText)
			}
		})
	}
}

func TestOutcomeString(t *testing.T) {
	tests := []struct {
		name string
		o    middleware.Outcome
		want string
	}{
		{"allowed", middleware.Allowed, "allowed"},
		{"denied", middleware.Denied, "denied"},
		{"shadow_denied", middleware.ShadowDenied, "shadow_denied"},
		{"error", middleware.Error, "error"},
		{"key_error", middleware.KeyError, "key_error"},
		{"zero", 0, "unknown"},
		{"out_of_range", 200, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.String(); got != tt.want {
				t.Errorf("Outcome(%d).String() = %q, want %q", uint8(tt.o), got, tt.want)
			}
		})
	}
}

func TestWrappingNilPanics(t *testing.T) {
	mw, err := middleware.New(&stubLimiter{policy: limiter.MustPolicy("api", limiter.PerMinute(1))})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "nil next handler") {
			t.Errorf("recovered %v, want a panic naming the nil next handler", r)
		}
	}()
	mw(nil)
}
