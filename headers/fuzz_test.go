package headers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/internal/window"
	"github.com/fixedwindow/ratelimit/limiter"
)

func FuzzRetryAfterSeconds(f *testing.F) {
	for _, d := range []int64{0, -1, 1, int64(time.Millisecond), int64(29500 * time.Millisecond), int64(30 * time.Second), 1<<63 - 1} {
		f.Add(d)
	}
	f.Fuzz(func(t *testing.T, ns int64) {
		d := time.Duration(ns)
		s := refusal.Seconds(d)
		if s < 1 {
			t.Fatalf("refusal.Seconds(%v) = %d < 1", d, s)
		}
		if d > 0 && time.Duration(s-1)*time.Second >= d && s > 1 {
			t.Fatalf("refusal.Seconds(%v) = %d: one second less would still cover the wait", d, s)
		}
		if d > 0 && s < int64(d/time.Second) {
			t.Fatalf("refusal.Seconds(%v) = %d comes before the boundary", d, s)
		}
	})
}

var (
	// Every number is an RFC 9651 Integer: at most 15 digits.
	serviceItem = regexp.MustCompile(`^"[A-Za-z0-9_.-]+";r=[0-9]{1,15};t=[0-9]{1,15}$`)
	policyItem  = regexp.MustCompile(`^"[A-Za-z0-9_.-]+";q=[1-9][0-9]{0,14}(;w=[1-9][0-9]{0,14})?$`)
)

// FuzzWrite builds a real decision with limiter.Decide from fuzzed
// rates, counts, instants and costs, writes it with every option on, and
// checks each header against the decision.
func FuzzWrite(f *testing.F) {
	f.Add(int64(10), int64(60_000), int64(0), int64(1_785_499_230_000), int64(1), int64(0), int64(0))
	f.Add(int64(10), int64(60_000), int64(10), int64(1_785_499_230_500), int64(1), int64(5), int64(1000))
	f.Add(int64(1), int64(1500), int64(1), int64(1_500_000_000_000), int64(1), int64(0), int64(0))
	f.Add(int64(1<<40), int64(1), int64(-5), int64(-1), int64(1<<62), int64(3), int64(86_400_000))
	f.Fuzz(func(t *testing.T, limit, windowMs, count, nowNs, cost, limit2, window2Ms int64) {
		rates := []limiter.Rate{{Limit: limit, Window: time.Duration(windowMs) * time.Millisecond}}
		if limit2 > 0 && window2Ms > 0 {
			rates = append(rates, limiter.Rate{Limit: limit2, Window: time.Duration(window2Ms) * time.Millisecond})
		}
		if windowMs > 1<<40 || window2Ms > 1<<40 || cost <= 0 {
			return
		}
		p, err := limiter.NewPolicy("fz", rates...)
		if err != nil {
			return
		}
		now := time.Unix(0, nowNs)
		var prior [limiter.MaxWindows]limiter.State
		for i := range p.NumRates() {
			id, _, _ := window.ID(now.UnixMilli(), p.Rate(i).Window.Milliseconds())
			prior[i] = limiter.State{Window: id, Count: count}
		}
		_, d := limiter.Decide(p, prior, now, cost)
		{
			w, err := New(WithDraftHeaders(), WithProblemJSON("", ""))
			if err != nil {
				t.Fatal(err)
			}
			h := http.Header{}
			writeAt(w, h, &d, now)
			checkWritten(t, h, &d, p)
			rec := httptest.NewRecorder()
			writeDeniedAt(w, rec, httptest.NewRequest(http.MethodGet, "/", nil), &d, now)
			if rec.Code != http.StatusTooManyRequests || !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("WriteDenied: status %d body %q", rec.Code, rec.Body.String())
			}
			if d.CostExceedsLimit {
				if _, ok := rec.Header()["Retry-After"]; ok || !strings.Contains(rec.Body.String(), "no wait will admit it") {
					t.Fatalf("WriteDenied of a cost over the limit: Retry-After %q, body %q", rec.Header().Get("Retry-After"), rec.Body.String())
				}
			} else if ra, err := strconv.ParseInt(rec.Header().Get("Retry-After"), 10, 64); err != nil || ra < 1 {
				t.Fatalf("WriteDenied: Retry-After %q", rec.Header().Get("Retry-After"))
			}
		}
	})
}

func checkWritten(t *testing.T, h http.Header, d *limiter.Decision, p *limiter.Policy) {
	t.Helper()
	num := func(name string) int64 {
		t.Helper()
		vs := h.Values(name)
		if len(vs) != 1 {
			t.Fatalf("%s has %d values: %q", name, len(vs), vs)
		}
		n, err := strconv.ParseInt(vs[0], 10, 64)
		if err != nil {
			t.Fatalf("%s = %q is not an integer", name, vs[0])
		}
		return n
	}
	if num("X-RateLimit-Limit") != d.Limit || num("X-RateLimit-Remaining") != d.Remaining || d.Remaining < 0 {
		t.Fatalf("limit/remaining %v do not match %+v", h, d)
	}
	if reset := num("X-RateLimit-Reset"); reset != refusal.UnixCeil(d.ResetAt) || time.Unix(reset, 0).Before(d.ResetAt) {
		t.Fatalf("reset %d, decision resets at %v", reset, d.ResetAt)
	}
	if d.Allowed || d.CostExceedsLimit {
		// No wait admits a cost above a window's limit: no Retry-After.
		if _, ok := h["Retry-After"]; ok {
			t.Fatalf("Retry-After on an admission, or on a cost over the limit: %v %+v", h, d)
		}
	} else {
		ra := num("Retry-After")
		if ra < 1 || time.Duration(ra)*time.Second < d.RetryAfter {
			t.Fatalf("Retry-After %d before the boundary, %v away", ra, d.RetryAfter)
		}
	}
	// Every decision Decide made is dated, even one in the Unix epoch's
	// first millisecond, and lists all its windows.
	items := splitList(h.Get("RateLimit"))
	if len(items) != p.NumRates() {
		t.Fatalf("RateLimit %q has %d items", h.Get("RateLimit"), len(items))
	}
	for _, it := range items {
		if !serviceItem.MatchString(it) {
			t.Fatalf("RateLimit item %q is malformed", it)
		}
	}
	// The deciding window's reset is the Retry-After instant: the draft
	// wants Retry-After no earlier than the reset parameter.
	if !d.Allowed && !d.CostExceedsLimit {
		agree := false
		for _, it := range items {
			agree = agree || it[regexp.MustCompile(`;t=`).FindStringIndex(it)[1]:] == h.Get("Retry-After")
		}
		if !agree {
			t.Fatalf("RateLimit %q: no window's reset is Retry-After %q", h.Get("RateLimit"), h.Get("Retry-After"))
		}
	}
	pol := splitList(h.Get("RateLimit-Policy"))
	if len(pol) != p.NumRates() {
		t.Fatalf("RateLimit-Policy %q lists %d windows, want %d", h.Get("RateLimit-Policy"), len(pol), p.NumRates())
	}
	for _, it := range pol {
		if !policyItem.MatchString(it) {
			t.Fatalf("RateLimit-Policy item %q is malformed", it)
		}
	}
}

func splitList(s string) []string {
	var out []string
	for _, it := range regexp.MustCompile(`, `).Split(s, -1) {
		if it != "" {
			out = append(out, it)
		}
	}
	return out
}
