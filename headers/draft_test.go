package headers

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

func TestWriteDraftSingleWindow(t *testing.T) {
	p := limiter.MustPolicy("", limiter.PerMinute(100))
	l, clk := newLimiter(t, p, noon30)
	w := newWriter(t, WithDraftHeaders())
	tests := []struct {
		name       string
		take       int
		advance    time.Duration
		rateLimit  string
		retryAfter string
	}{
		{"first_request", 1, 0, `"default";r=99;t=30`, ""},
		{"fifty_used_29.5s_left", 49, 500 * time.Millisecond, `"default";r=50;t=30`, ""},
		{"exhausted", 50, 10 * time.Second, `"default";r=0;t=20`, ""},
		{"denied", 1, 0, `"default";r=0;t=20`, "20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Advance(tt.advance)
			d := allow(t, l, tt.take)
			h := http.Header{}
			w.Write(h, &d)
			if got := h.Get("RateLimit-Policy"); got != `"default";q=100;w=60` {
				t.Fatalf("RateLimit-Policy = %q", got)
			}
			if got := h.Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
			if got := h.Get("Retry-After"); got != tt.retryAfter {
				t.Fatalf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if h.Get("X-RateLimit-Limit") != "100" {
				t.Fatalf("legacy headers missing: %v", h)
			}
		})
	}
}

// TestWriteDraftLayered uses 100 per minute and 5 per second: after five
// requests in one second the second window decides.
func TestWriteDraftLayered(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	const policy = `"api-1m";q=100;w=60, "api-1s";q=5;w=1`
	tests := []struct {
		name      string
		opts      []Option
		take      int
		rateLimit string
		retry     string
	}{
		{"every_window", nil, 3, `"api-1m";r=97;t=30, "api-1s";r=2;t=1`, ""},
		{"every_window_denied_by_the_second", nil, 6, `"api-1m";r=95;t=30, "api-1s";r=0;t=1`, "1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, p, noon30.Add(200*time.Millisecond))
			w := newWriter(t, append([]Option{WithDraftHeaders()}, tt.opts...)...)
			d := allow(t, l, tt.take)
			h := http.Header{}
			w.Write(h, &d)
			if got := h.Get("RateLimit-Policy"); got != policy {
				t.Fatalf("RateLimit-Policy = %q, want %q", got, policy)
			}
			if got := h.Get("RateLimit"); got != tt.rateLimit {
				t.Fatalf("RateLimit = %q, want %q", got, tt.rateLimit)
			}
			if got := h.Get("Retry-After"); got != tt.retry {
				t.Fatalf("Retry-After = %q, want %q", got, tt.retry)
			}
		})
	}
}

func TestWindowSuffix(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{time.Second, "1s"}, {90 * time.Second, "90s"}, {time.Minute, "1m"}, {90 * time.Minute, "90m"},
		{time.Hour, "1h"}, {24 * time.Hour, "1d"}, {36 * time.Hour, "36h"}, {500 * time.Millisecond, "500ms"},
		{1500 * time.Millisecond, "1500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := refusal.WindowSuffix(tt.in); got != tt.want {
				t.Fatalf("refusal.WindowSuffix(%v) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestWriteDraftOnly(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(10))
	l, _ := newLimiter(t, p, noon30)
	w := newWriter(t, WithDraftHeaders(), WithoutLegacyHeaders())
	d := allow(t, l, 11)
	h := http.Header{}
	w.Write(h, &d)
	want := http.Header{
		"Ratelimit":        {`"default";r=0;t=30`},
		"Ratelimit-Policy": {`"default";q=10;w=60`},
		"Retry-After":      {"30"},
	}
	if len(h) != len(want) {
		t.Fatalf("got %v, want %v", h, want)
	}
	for k, v := range want {
		if h.Get(k) != v[0] {
			t.Fatalf("%s = %q, want %q (all: %v)", k, h.Get(k), v[0], h)
		}
	}
}

func TestNames(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(10))
	l, _ := newLimiter(t, p, noon30)
	w := newWriter(t, WithDraftHeaders(), WithNames(Names{Limit: "x-limit", RetryAfter: "X-Retry-In", RateLimit: "X-Draft"}))
	d := allow(t, l, 11)
	h := http.Header{}
	w.Write(h, &d)
	for _, name := range []string{"X-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset", "X-Retry-In", "X-Draft", "Ratelimit-Policy"} {
		if _, ok := h[name]; !ok {
			t.Fatalf("no %s in %v", name, h)
		}
	}
	if _, ok := h["Retry-After"]; ok {
		t.Fatalf("Retry-After set despite the rename: %v", h)
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name string
		opts []Option
		want string // in the error
	}{
		{"name_with_space", []Option{WithNames(Names{Limit: "X Limit"})}, "X Limit"},
		{"name_with_colon", []Option{WithNames(Names{Reset: "Reset:"})}, "Reset:"},
		{"duplicate_name", []Option{WithNames(Names{Limit: "X-Same", Remaining: "x-same"})}, "X-Same"},
		{"nil_option", []Option{nil}, "nil"},
		// An option that cannot apply is refused, not ignored.
		{"draft_name_without_draft", []Option{WithNames(Names{RateLimit: "X-Draft"})}, "does not apply"},
		{"draft_policy_name_without_draft", []Option{WithNames(Names{RateLimitPolicy: "X-Draft-Policy"})}, "does not apply"},
		{"legacy_name_without_legacy", []Option{WithDraftHeaders(), WithoutLegacyHeaders(), WithNames(Names{Limit: "X-Limit"})}, "does not apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.opts...)
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New: got %v, want ErrInvalidOption", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New: got %q, want an error naming %q", err, tt.want)
			}
		})
	}
}

// TestWriteDraftDatesByTheDecision: the draft t parameter counts from the
// instant the limiter decided at, not from an instant the writer is given
// (here one a whole minute off) or reads, so the header agrees with the
// decision.
func TestWriteDraftDatesByTheDecision(t *testing.T) {
	p := limiter.MustPolicy("", limiter.PerMinute(100))
	l, _ := newLimiter(t, p, noon30)
	w := newWriter(t, WithDraftHeaders())
	d := allow(t, l, 1)
	h := http.Header{}
	writeAt(w, h, &d, noon30.Add(-time.Minute))
	if got, want := h.Get("RateLimit"), `"default";r=99;t=30`; got != want {
		t.Fatalf("RateLimit = %q, want %q (30 s from the decision at 12:00:30)", got, want)
	}
	if !d.DecidedAt().Equal(noon30) {
		t.Fatalf("DecidedAt = %v, want %v", d.DecidedAt(), noon30)
	}
}
