package headers

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestWriteAroundBoundary drives a real limiter (10 per minute) on a fake
// clock across a window boundary and checks every header of each decision.
func TestWriteAroundBoundary(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(10))
	l, clk := newLimiter(t, p, noon30)
	w := newWriter(t)
	end1 := time.Date(2026, 7, 31, 12, 1, 0, 0, time.UTC).Unix()
	end2 := end1 + 60

	tests := []struct {
		name      string
		at        time.Time
		take      int
		remaining string
		reset     int64
		retry     string // "" means no Retry-After
	}{
		{"first_of_window_at_30s", noon30, 1, "9", end1, ""},
		{"tenth_is_last_allowed", noon30, 9, "0", end1, ""},
		{"eleventh_denied_30s_before_boundary", noon30, 1, "0", end1, "30"},
		{"denied_at_29.5s_before_rounds_up", noon30.Add(500 * time.Millisecond), 1, "0", end1, "30"},
		{"denied_1ms_before_boundary_is_1", noon30.Add(30*time.Second - time.Millisecond), 1, "0", end1, "1"},
		{"first_at_boundary_allowed", noon30.Add(30 * time.Second), 1, "9", end2, ""},
		{"later_in_new_window", noon30.Add(59 * time.Second), 1, "8", end2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk.Set(tt.at)
			d := allow(t, l, tt.take)
			h := http.Header{}
			if d.Allowed {
				h.Set("Retry-After", "stale")
			}
			w.Write(h, &d)
			check := func(name, want string) {
				t.Helper()
				if got := h.Get(name); got != want {
					t.Fatalf("at %v: %s = %q, want %q (decision %+v)", tt.at, name, got, want, d)
				}
			}
			check("X-RateLimit-Limit", "10")
			check("X-RateLimit-Remaining", tt.remaining)
			check("X-RateLimit-Reset", strconv.FormatInt(tt.reset, 10))
			check("Retry-After", tt.retry)
			if tt.retry == "" && d.Allowed != true {
				t.Fatalf("decision denied, want allowed: %+v", d)
			}
			if _, ok := h["Retry-After"]; ok && d.Allowed {
				t.Fatalf("Retry-After present on an admission: %v", h)
			}
		})
	}
}

// TestWriteSubSecondWindow checks that a reset that falls inside a second
// is announced at the next whole second, never before the boundary.
func TestWriteSubSecondWindow(t *testing.T) {
	p := limiter.MustPolicy("fast", limiter.Rate{Limit: 1, Window: 1500 * time.Millisecond})
	start := time.Unix(1_500_000_000, 0) // a multiple of 1.5s: window [t, t+1.5s)
	l, _ := newLimiter(t, p, start)
	w := newWriter(t, WithDraftHeaders())
	allow(t, l, 1)
	d := allow(t, l, 1)
	h := http.Header{}
	w.Write(h, &d)
	tests := []struct{ name, header, want string }{
		{"reset_rounded_up", "X-RateLimit-Reset", "1500000002"},
		{"retry_after_1.5s_is_2", "Retry-After", "2"},
		{"policy_without_w", "RateLimit-Policy", `"fast";q=1`},
		{"ratelimit_t_rounded_up", "RateLimit", `"fast";r=0;t=2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.Get(tt.header); got != tt.want {
				t.Fatalf("%s = %q, want %q", tt.header, got, tt.want)
			}
		})
	}
}

func TestWriteNilDecision(t *testing.T) {
	h := http.Header{}
	newWriter(t).Write(h, nil)
	if len(h) != 0 {
		t.Fatalf("Write(nil) set %v, want nothing", h)
	}
}

// TestWriteValuesAreIndependent checks that the values of one response
// share nothing a handler could change in another's.
func TestWriteValuesAreIndependent(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(100))
	l, _ := newLimiter(t, p, noon30)
	w := newWriter(t, WithDraftHeaders())
	d1 := allow(t, l, 1)
	d2 := allow(t, l, 1)
	h1, h2 := http.Header{}, http.Header{}
	w.Write(h1, &d1)
	w.Write(h2, &d2)
	h1["X-Ratelimit-Remaining"][0] = "changed"
	h1["Ratelimit-Policy"][0] = "changed"
	h1.Add("X-Ratelimit-Limit", "appended")
	if got := h2.Get("X-RateLimit-Remaining"); got != "98" {
		t.Fatalf("second response's remaining = %q, want 98", got)
	}
	if got := h2.Get("RateLimit-Policy"); got != `"default";q=100;w=60` {
		t.Fatalf("second response's policy = %q", got)
	}
	if got := h2.Values("X-RateLimit-Limit"); len(got) != 1 || got[0] != "100" {
		t.Fatalf("second response's limit = %q, want [100]", got)
	}
}

// TestWriteWithoutLegacyHeaders: with the X-RateLimit-* fields off and no
// draft fields, an admission carries no rate-limit header at all and a
// denial only Retry-After.
func TestWriteWithoutLegacyHeaders(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(1))
	l, _ := newLimiter(t, p, noon30)
	w := newWriter(t, WithoutLegacyHeaders())
	for _, tt := range []struct {
		name string
		want http.Header
	}{
		{"allowed_writes_nothing", http.Header{}},
		{"denied_writes_retry_after_only", http.Header{"Retry-After": {"30"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := allow(t, l, 1)
			h := http.Header{"Retry-After": {"stale"}}
			w.Write(h, &d)
			if len(h) != len(tt.want) || h.Get("Retry-After") != tt.want.Get("Retry-After") {
				t.Fatalf("headers %v, want %v", h, tt.want)
			}
		})
	}
}
