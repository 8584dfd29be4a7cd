package headers

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// decisionOf returns the decision of n requests through a limiter of p
// at noon30.
func decisionOf(t *testing.T, p *limiter.Policy, n int) *limiter.Decision {
	t.Helper()
	l, _ := newLimiter(t, p, noon30)
	d := allow(t, l, n)
	return &d
}

// TestWriteListsEveryPolicy: RateLimit-Policy names the policy of every
// decision given, once each, and RateLimit lists the windows of each, in
// the same order (issue 36: it listed the most restrictive decision's
// alone), while X-RateLimit-* and Retry-After describe the most
// restrictive decision alone.
func TestWriteListsEveryPolicy(t *testing.T) {
	outer := limiter.MustPolicy("outer", limiter.PerMinute(3))
	inner := limiter.MustPolicy("inner", limiter.PerMinute(10))
	layered := limiter.MustPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	tight := *decisionOf(t, outer, 1) // outer: 2 of 3 left
	loose := decisionOf(t, inner, 3)  // inner: 7 of 10 left
	api := decisionOf(t, layered, 1)  // 99 of 100, 4 of 5
	undated := limiter.Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAt: noon30.Add(30 * time.Second), Window: time.Minute}
	tests := []struct {
		name          string
		d             limiter.Decision
		all           []*limiter.Decision
		policy, limit string
	}{
		{"none_is_write_at", tight, nil, `"outer";q=3;w=60`, `"outer";r=2;t=30`},
		{"own_alone_is_write_at", tight, []*limiter.Decision{&tight}, `"outer";q=3;w=60`, `"outer";r=2;t=30`},
		{"outer_then_inner", tight, []*limiter.Decision{&tight, loose}, `"outer";q=3;w=60, "inner";q=10;w=60`, `"outer";r=2;t=30, "inner";r=7;t=30`},
		{"order_kept", tight, []*limiter.Decision{loose, &tight}, `"inner";q=10;w=60, "outer";q=3;w=60`, `"inner";r=7;t=30, "outer";r=2;t=30`},
		{"each_once", tight, []*limiter.Decision{&tight, loose, &tight, loose}, `"outer";q=3;w=60, "inner";q=10;w=60`, `"outer";r=2;t=30, "inner";r=7;t=30`},
		{"own_first_when_missing", tight, []*limiter.Decision{loose}, `"outer";q=3;w=60, "inner";q=10;w=60`, `"outer";r=2;t=30, "inner";r=7;t=30`},
		{"layered_lists_every_window", tight, []*limiter.Decision{&tight, api}, `"outer";q=3;w=60, "api-1m";q=100;w=60, "api-1s";q=5;w=1`, `"outer";r=2;t=30, "api-1m";r=99;t=30, "api-1s";r=4;t=1`},
		{"nil_entries_skipped", tight, []*limiter.Decision{nil, &tight, nil, loose}, `"outer";q=3;w=60, "inner";q=10;w=60`, `"outer";r=2;t=30, "inner";r=7;t=30`},
		{"undated_without_policy_names_its_window", undated, []*limiter.Decision{loose}, `"default";q=10;w=60, "inner";q=10;w=60`, `"default";r=7;t=30, "inner";r=7;t=30`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, WithDraftHeaders())
			one, all := http.Header{}, http.Header{}
			writeAt(w, one, &tt.d, noon30)
			writeAt(w, all, &tt.d, noon30, tt.all...)
			if got := all.Get("RateLimit-Policy"); got != tt.policy {
				t.Errorf("RateLimit-Policy = %q, want %q", got, tt.policy)
			}
			if got := all.Get("RateLimit"); got != tt.limit {
				t.Errorf("RateLimit = %q, want %q: every window of every policy named, in the same order", got, tt.limit)
			}
			for _, name := range []string{"X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", "Retry-After"} {
				if got, want := all.Get(name), one.Get(name); got != want {
					t.Errorf("%s = %q, want a single policy's Write's %q", name, got, want)
				}
			}
		})
	}
}

// Without the draft fields there is no list to write: Write with the
// others' decisions is Write without them.
func TestWriteAppliedLegacyOnly(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(3))
	l, _ := newLimiter(t, p, noon30)
	d := allow(t, l, 1)
	w := newWriter(t)
	h := http.Header{}
	writeAt(w, h, &d, noon30, &d, decisionOf(t, limiter.MustPolicy("other", limiter.PerMinute(9)), 1))
	if _, ok := h["Ratelimit-Policy"]; ok || h.Get("X-RateLimit-Remaining") != "2" {
		t.Fatalf("headers %v, want the legacy fields of the decision only", h)
	}
}

// TestWriteDeniedApplied: a refusal's draft fields list every policy
// that applied and its windows, the refusal's among them.
func TestWriteDeniedApplied(t *testing.T) {
	outer := limiter.MustPolicy("outer", limiter.PerMinute(3))
	inner := limiter.MustPolicy("inner", limiter.PerMinute(1))
	l, _ := newLimiter(t, inner, noon30)
	d := allow(t, l, 2) // refused
	w := newWriter(t, WithDraftHeaders())
	rec := httptest.NewRecorder()
	writeDeniedAt(w, rec, httptest.NewRequest(http.MethodGet, "/", nil), &d, noon30, decisionOf(t, outer, 1), &d)
	for name, want := range map[string]string{
		"RateLimit-Policy": `"outer";q=3;w=60, "inner";q=1;w=60`,
		"RateLimit":        `"outer";r=2;t=30, "inner";r=0;t=30`,
		"Retry-After":      "30",
	} {
		if got := rec.Header().Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if rec.Code != http.StatusTooManyRequests {
		t.Errorf("status %d, want 429", rec.Code)
	}
}

// TestWriteLegacyClamped: the legacy fields are clamped as the draft's
// are, so a custom Limiter's out-of-range numbers never reach a client as
// "-5".
func TestWriteLegacyClamped(t *testing.T) {
	tests := []struct {
		name             string
		opts             []Option
		limit, remaining int64
		wantLimit        string
		wantRemaining    string
	}{
		{"negative_remaining", nil, 10, -5, "10", "0"},
		{"negative_limit", nil, -5, 0, "0", "0"},
		{"both_negative", nil, -1, -2, "0", "0"},
		{"over_max_limit", nil, 1 << 53, 1<<53 - 1, "999999999999999", "999999999999999"},
		{"in_range_unchanged", nil, 10, 3, "10", "3"},
		{"draft_on_negative_remaining", []Option{WithDraftHeaders()}, 10, -5, "10", "0"},
		{"draft_on_negative_limit", []Option{WithDraftHeaders()}, -5, -5, "0", "0"},
	}
	for _, tt := range tests {
		for _, allowed := range []bool{true, false} {
			name := tt.name + map[bool]string{true: "/allowed", false: "/denied"}[allowed]
			t.Run(name, func(t *testing.T) {
				d := limiter.Decision{Allowed: allowed, Limit: tt.limit, Remaining: tt.remaining, ResetAt: newYear.Add(time.Minute), Window: time.Minute}
				if !allowed {
					d.RetryAfter = time.Minute
				}
				h := http.Header{}
				writeAt(newWriter(t, tt.opts...), h, &d, newYear)
				if got := h.Get("X-RateLimit-Limit"); got != tt.wantLimit {
					t.Errorf("Limit %d: X-RateLimit-Limit = %q, want %q", tt.limit, got, tt.wantLimit)
				}
				if got := h.Get("X-RateLimit-Remaining"); got != tt.wantRemaining {
					t.Errorf("Remaining %d: X-RateLimit-Remaining = %q, want %q", tt.remaining, got, tt.wantRemaining)
				}
			})
		}
	}
}

// TestWriteBuffer: the legacy fields go into the caller's Buffer once;
// a second write, or one with the draft fields, is Write's.
func TestWriteBuffer(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(3))
	l, _ := newLimiter(t, p, noon30)
	d := allow(t, l, 1)
	tests := []struct {
		name       string
		opts       []Option
		writes     int
		wantAllocs float64
	}{
		// The Buffer itself is one allocation: the values alias it, so it
		// goes to the heap, as the middleware's state does.
		{"legacy_first_write_allocates_nothing_more", nil, 1, 1},
		{"legacy_second_write_allocates_its_own", nil, 2, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWriter(t, tt.opts...)
			h := make(http.Header, 8)
			allocs := testing.AllocsPerRun(50, func() {
				var buf Buffer
				for range tt.writes {
					w.WriteBuffer(&buf, h, &d)
				}
			})
			if allocs != tt.wantAllocs {
				t.Errorf("%d writes: %v allocations, want %v", tt.writes, allocs, tt.wantAllocs)
			}
			one := http.Header{}
			writeAt(w, one, &d, noon30)
			for name := range one {
				if h.Get(name) != one.Get(name) {
					t.Errorf("%s = %q, want a single policy's Write's %q", name, h.Get(name), one.Get(name))
				}
			}
		})
	}
	// The largest count a header carries, MaxLimit's 15 digits, fits the
	// Buffer: no allocation of its own for the digits.
	t.Run("largest_remaining_fits", func(t *testing.T) {
		w := newWriter(t)
		big := limiter.Dated(limiter.Decision{Allowed: true, Limit: limiter.MaxLimit, Remaining: limiter.MaxLimit + 1, ResetAt: noon30.Add(time.Minute), Window: time.Minute, Policy: p}, noon30)
		h := make(http.Header, 8)
		allocs := testing.AllocsPerRun(50, func() {
			var buf Buffer
			w.WriteBuffer(&buf, h, &big)
		})
		if got := h.Get("X-RateLimit-Remaining"); allocs != 1 || got != "999999999999999" {
			t.Errorf("Remaining %d: %v allocations, X-RateLimit-Remaining %q; want 1 (the Buffer) and 999999999999999", big.Remaining, allocs, got)
		}
	})
	// A denial's Retry-After has no room in the Buffer: Write's own
	// block holds its values, and the Buffer stays unwritten.
	t.Run("denial_is_writes", func(t *testing.T) {
		w := newWriter(t)
		refused := limiter.Dated(limiter.Decision{Limit: 3, ResetAt: noon30.Add(30 * time.Second), RetryAfter: 30 * time.Second, Window: time.Minute, Policy: p}, noon30)
		var buf Buffer
		h, want := http.Header{}, http.Header{}
		w.WriteBuffer(&buf, h, &refused)
		w.Write(want, &refused)
		if buf != (Buffer{}) {
			t.Error("a denial was written into the Buffer")
		}
		for name := range want {
			if h.Get(name) != want.Get(name) {
				t.Errorf("%s = %q, want Write's %q", name, h.Get(name), want.Get(name))
			}
		}
		if h.Get("Retry-After") != "30" {
			t.Errorf("Retry-After = %q, want 30", h.Get("Retry-After"))
		}
	})
	// With the draft fields the Buffer is not used, and RateLimit-Policy
	// and RateLimit list what applied.
	w := newWriter(t, WithDraftHeaders())
	var buf Buffer
	h := http.Header{}
	w.WriteBuffer(&buf, h, &d, &d, decisionOf(t, limiter.MustPolicy("other", limiter.PerMinute(9)), 1))
	if got := h.Get("RateLimit-Policy"); got != `"api";q=3;w=60, "other";q=9;w=60` {
		t.Errorf("RateLimit-Policy = %q", got)
	}
	if got := h.Get("RateLimit"); got != `"api";r=2;t=30, "other";r=8;t=30` {
		t.Errorf("RateLimit = %q", got)
	}
}
