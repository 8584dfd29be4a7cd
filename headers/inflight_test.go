package headers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

const capPolicy = `"exports";q=5;qu="concurrent-requests"`

// capDecisions returns the decisions of a cap of 5 on a fake clock: the
// admissions of the first n acquires and then, if n is 5, a refusal
// whose RetryAfter is 1.5s (one slot held that long before).
func capDecisions(t *testing.T, n int) (*limiter.InFlight, []limiter.Decision) {
	t.Helper()
	clk := limitertest.New(noon30)
	f, err := limiter.NewInFlight("exports", 5, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	ctx := context.Background()
	_, r, _ := f.Acquire(ctx, "k")
	clk.Advance(1500 * time.Millisecond)
	r()
	var ds []limiter.Decision
	for range n {
		d, _, err := f.Acquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if n == 5 {
		d, _, _ := f.Acquire(ctx, "k")
		ds = append(ds, d)
	}
	return f, ds
}

func TestWriteCapDecision(t *testing.T) {
	_, ds := capDecisions(t, 2)
	for _, c := range []struct {
		name              string
		opts              []Option
		rateLimit, policy string
		legacy            bool
	}{
		{"legacy", nil, "", "", true},
		{"draft", []Option{WithDraftHeaders()}, `"exports";r=3`, capPolicy, true},
		{"draft_only", []Option{WithDraftHeaders(), WithoutLegacyHeaders()}, `"exports";r=3`, capPolicy, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{"X-Ratelimit-Reset": {"stale"}}
			newWriter(t, c.opts...).Write(h, &ds[1])
			if got := h.Get("RateLimit"); got != c.rateLimit {
				t.Errorf("RateLimit = %q, want %q", got, c.rateLimit)
			}
			if got := h.Get("RateLimit-Policy"); got != c.policy {
				t.Errorf("RateLimit-Policy = %q, want %q", got, c.policy)
			}
			if c.legacy && (h.Get("X-RateLimit-Limit") != "5" || h.Get("X-RateLimit-Remaining") != "3") {
				t.Errorf("legacy fields %v, want limit 5 and remaining 3", h)
			}
			if _, ok := h["X-Ratelimit-Reset"]; ok && c.legacy {
				t.Errorf("X-RateLimit-Reset = %q: a cap has no reset", h.Get("X-RateLimit-Reset"))
			}
		})
	}
}

func TestWriteDeniedCap(t *testing.T) {
	_, ds := capDecisions(t, 5)
	refused := ds[5]
	rate := decisionOf(t, limiter.MustPolicy("api", limiter.PerMinute(100)), 1)
	for _, c := range []struct {
		name, body, contentType string
		opts                    []Option
	}{
		{"text", "concurrency limit exceeded; retry in 2 seconds\n", "text/plain; charset=utf-8", []Option{WithDraftHeaders()}},
		{"problem", `{"type":"about:blank","title":"Too Many Requests","status":429,"detail":"concurrency limit of 5 exceeded; retry in 2 seconds","retry_after":2,"violated-policies":["exports"]}` + "\n",
			"application/problem+json", []Option{WithDraftHeaders(), WithProblemJSON("", "")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			rec.Header()["X-Ratelimit-Reset"] = []string{"1785499260"} // an outer middleware's
			newWriter(t, c.opts...).WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &refused, rate, &refused)
			h := rec.Header()
			want := map[string]string{
				"Retry-After": "2", "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "",
				"RateLimit": `"api";r=99;t=30, "exports";r=0`, "RateLimit-Policy": `"api";q=100;w=60, ` + capPolicy, "Content-Type": c.contentType,
			}
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			if rec.Code != http.StatusTooManyRequests || rec.Body.String() != c.body {
				t.Errorf("got %d %q, want 429 %q", rec.Code, rec.Body.String(), c.body)
			}
		})
	}
}

// TestWriteListsCaps: caps given among all join the draft fields after
// the rates, each once.
func TestWriteListsCaps(t *testing.T) {
	_, ds := capDecisions(t, 1)
	other, err := limiter.NewInFlight("global", 100)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	g, release, err := other.Acquire(context.Background(), "all")
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	rate := limiter.MustPolicy("api", limiter.PerMinute(100))
	l, _ := newLimiter(t, rate, noon30)
	d := allow(t, l, 1)
	for _, c := range []struct {
		name              string
		opts              []Option
		all               []*limiter.Decision
		caps              []*limiter.Decision
		rateLimit, policy string
	}{
		{"all_lists_the_caps_once", []Option{WithDraftHeaders()}, []*limiter.Decision{&d, &ds[0], &g},
			[]*limiter.Decision{&ds[0], &g}, `"api";r=99;t=30, "exports";r=4, "global";r=99`,
			`"api";q=100;w=60, ` + capPolicy + `, "global";q=100;qu="concurrent-requests"`},
		{"caps_added_to_the_policies", []Option{WithDraftHeaders()}, nil,
			[]*limiter.Decision{&ds[0], &g}, `"api";r=99;t=30, "exports";r=4, "global";r=99`,
			`"api";q=100;w=60, ` + capPolicy + `, "global";q=100;qu="concurrent-requests"`},
		{"a_rate_decision_is_skipped", []Option{WithDraftHeaders()}, nil,
			[]*limiter.Decision{&d}, `"api";r=99;t=30`, `"api";q=100;w=60`},
		{"no_draft_no_fields", nil, nil, []*limiter.Decision{&ds[0]}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWriter(t, c.opts...)
			h := http.Header{}
			w.Write(h, &d, append(c.all, c.caps...)...)
			if got := h.Get("RateLimit"); got != c.rateLimit {
				t.Errorf("RateLimit = %q, want %q", got, c.rateLimit)
			}
			if got := h.Get("RateLimit-Policy"); got != c.policy {
				t.Errorf("RateLimit-Policy = %q, want %q", got, c.policy)
			}
			if h.Get("X-RateLimit-Limit") != "100" {
				t.Errorf("legacy fields %v: want the rate's", h)
			}
		})
	}
}
