package headers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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
