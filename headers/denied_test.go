package headers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

func TestWriteDeniedText(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(10))
	l, _ := newLimiter(t, p, noon30.Add(500*time.Millisecond))
	d := allow(t, l, 11)
	tests := []struct {
		name   string
		method string
		body   string
	}{
		{"get", http.MethodGet, "rate limit exceeded; retry in 30 seconds\n"},
		{"head_has_no_body", http.MethodHead, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newWriter(t).WriteDenied(rec, httptest.NewRequest(tt.method, "/", nil), &d)
			if rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", rec.Code)
			}
			want := map[string]string{
				"Retry-After":            "30",
				"X-RateLimit-Remaining":  "0",
				"Content-Type":           "text/plain; charset=utf-8",
				"Cache-Control":          "no-store",
				"X-Content-Type-Options": "nosniff",
				"Content-Length":         "41",
			}
			for k, v := range want {
				if got := rec.Header().Get(k); got != v {
					t.Fatalf("%s = %q, want %q", k, got, v)
				}
			}
			if got := rec.Body.String(); got != tt.body {
				t.Fatalf("body %q, want %q", got, tt.body)
			}
		})
	}
}

func TestWriteDeniedProblemJSON(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	l, _ := newLimiter(t, p, noon30.Add(200*time.Millisecond))
	d := allow(t, l, 6)
	tests := []struct {
		name       string
		typ, title string
		wantType   string
		wantTitle  string
		wantDetail string
		wantRetry  float64
		wantPolicy string
	}{
		{"defaults", "", "", "about:blank", "Too Many Requests", "rate limit of 5 per 1s exceeded; retry in 1 second", 1, "api-1s"},
		{"custom_needs_escaping", "https://example.com/probs/rate", `Slow "down"`, "https://example.com/probs/rate", `Slow "down"`, "rate limit of 5 per 1s exceeded; retry in 1 second", 1, "api-1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newWriter(t, WithProblemJSON(tt.typ, tt.title)).WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Content-Type") != "application/problem+json" {
				t.Fatalf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
			}
			var got struct {
				Type     string   `json:"type"`
				Title    string   `json:"title"`
				Status   int      `json:"status"`
				Detail   string   `json:"detail"`
				Retry    float64  `json:"retry_after"`
				Violated []string `json:"violated-policies"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatalf("body %q is not JSON: %v", rec.Body.String(), err)
			}
			if got.Type != tt.wantType || got.Title != tt.wantTitle || got.Status != 429 || got.Detail != tt.wantDetail ||
				got.Retry != tt.wantRetry || len(got.Violated) != 1 || got.Violated[0] != tt.wantPolicy {
				t.Fatalf("body %+v, want type %q title %q detail %q retry %v policy %q",
					got, tt.wantType, tt.wantTitle, tt.wantDetail, tt.wantRetry, tt.wantPolicy)
			}
		})
	}
}

func TestWriteDeniedEdgeDecisions(t *testing.T) {
	p := limiter.MustPolicy("default", limiter.PerMinute(10))
	l, _ := newLimiter(t, p, noon30)
	allowed := allow(t, l, 1)
	tests := []struct {
		name string
		d    *limiter.Decision
	}{
		{"nil_decision", nil},
		{"allowed_decision_still_says_when", &allowed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			newWriter(t, WithProblemJSON("", "")).WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), tt.d)
			if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("status %d, Retry-After %q, body %q", rec.Code, rec.Header().Get("Retry-After"), rec.Body.String())
			}
		})
	}
}

// TestWriteDeniedCostExceedsLimit: a cost no wait can admit (a
// reservation of 60,000 tokens on a day of 50,000) is refused without a
// Retry-After, with a body that says so, in text and problem+json; the
// rate-limit headers still describe the window (issue 36).
func TestWriteDeniedCostExceedsLimit(t *testing.T) {
	p := limiter.MustPolicy("tokens", limiter.PerDayIn(50_000, time.UTC)).MustUnit("acme-tokens")
	l, _ := newLimiter(t, p, noon30)
	d, err := l.Allow(t.Context(), "k", 60_000)
	if err != nil || d.Allowed || !d.CostExceedsLimit || d.RetryAfter != 0 {
		t.Fatalf("Allow(60000) on a day of 50000: %+v, %v; want refused, CostExceedsLimit, no RetryAfter", d, err)
	}
	const detail = "request cost exceeds the rate limit of 50000 per day; no wait will admit it"
	for _, tt := range []struct {
		name    string
		opts    []Option
		body    string // a substring
		noField string // a substring the body must not have
	}{
		{"text", nil, detail + "\n", "retry in"},
		{"problem_json", []Option{WithProblemJSON("", "")}, `"detail":"` + detail + `"`, "retry_after"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w, err := New(tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			w.WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
			if rec.Code != http.StatusTooManyRequests {
				t.Fatalf("status %d, want 429", rec.Code)
			}
			if v, ok := rec.Header()["Retry-After"]; ok {
				t.Fatalf("Retry-After %q: no wait admits the cost", v)
			}
			if got := rec.Header().Get("X-RateLimit-Limit"); got != "50000" {
				t.Fatalf("X-RateLimit-Limit %q, want 50000", got)
			}
			body := rec.Body.String()
			if !strings.Contains(body, tt.body) || strings.Contains(body, tt.noField) {
				t.Fatalf("body %q: want %q in it and no %q", body, tt.body, tt.noField)
			}
		})
	}
	if got := refusal.Text(&d, 99); got != detail {
		t.Fatalf("refusal.Text = %q, want %q", got, detail)
	}
}

// TestSubSecondWindowRefusal (issue 40): a window of 100 ms refused 70 ms
// before it ends is told as HTTP can tell it, Retry-After and the
// draft's t at 1 (whole seconds, at least 1) and X-RateLimit-Reset at the
// next whole second, and exactly in the problem body: retry_after_ms 70.
func TestSubSecondWindowRefusal(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.Rate{Limit: 2, Window: 100 * time.Millisecond}), noon30.Add(30*time.Millisecond))
	d := allow(t, l, 3)
	rec := httptest.NewRecorder()
	newWriter(t, WithDraftHeaders(), WithProblemJSON("", "")).WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &d)
	h := rec.Header()
	for name, want := range map[string]string{
		"Retry-After": "1", "RateLimit": `"api";r=0;t=1`, "X-RateLimit-Reset": strconv.FormatInt(noon30.Unix()+1, 10),
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if !strings.Contains(rec.Body.String(), `"retry_after":1,"retry_after_ms":70,`) {
		t.Errorf("body %s, want retry_after 1 and retry_after_ms 70", rec.Body)
	}
	rec = httptest.NewRecorder()
	newWriter(t, WithProblemJSON("", "")).WriteDenied(rec, nil, &limiter.Decision{Window: time.Minute, RetryAfter: 30 * time.Second})
	if strings.Contains(rec.Body.String(), "retry_after_ms") {
		t.Errorf("a minute's refusal: body %s, want no retry_after_ms", rec.Body)
	}
}
