package headers

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestWriteUnits: a response two policies of two units let through
// (60 requests a minute; 40,000 tokens a minute and 1,000,000 a month)
// carries one X-RateLimit-* set (the most restrictive decision), the
// draft fields listing every window of both policies with the tokens'
// unit, and with WithUnitHeaders one set per unit; a refusal by the
// tokens carries both sets, side by side (issue 36: it dropped the
// requests').
func TestWriteUnits(t *testing.T) {
	requests, _ := newLimiter(t, limiter.MustPolicy("requests", limiter.PerMinute(60)), noon30)
	tokens, _ := newLimiter(t, limiter.MustPolicy("tokens", limiter.PerMinute(40_000), limiter.PerHour(1_000_000)).MustUnit("acme-tokens"), noon30)
	dr := allow(t, requests, 1)
	dt, err := tokens.Allow(context.Background(), "k", 1500)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, WithDraftHeaders(), WithUnitHeaders())
	h := http.Header{}
	w.Write(h, &dr, &dr, &dt)
	reset := strconv.FormatInt(noon30.Add(30*1e9).Unix(), 10)
	for name, want := range map[string]string{
		"X-RateLimit-Limit":              "60",
		"X-RateLimit-Remaining":          "59",
		"X-RateLimit-Limit-Requests":     "60",
		"X-RateLimit-Remaining-Requests": "59",
		"X-RateLimit-Reset-Requests":     reset,
		"X-RateLimit-Limit-Tokens":       "40000",
		"X-RateLimit-Remaining-Tokens":   "38500",
		"X-RateLimit-Reset-Tokens":       reset,
		"RateLimit":                      `"requests";r=59;t=30, "tokens-1m";r=38500;t=30, "tokens-1h";r=998500;t=3570`,
		"RateLimit-Policy":               `"requests";q=60;w=60, "tokens-1m";q=40000;w=60;qu="acme-tokens", "tokens-1h";q=1000000;w=3600;qu="acme-tokens"`,
	} {
		if got := h.Get(name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	// Lower case for gRPC metadata.
	md := map[string][]string{} // as metadata.MD: names as given
	w.Lower().Write(http.Header(md), &dr, &dr, &dt)
	if got := md["x-ratelimit-remaining-tokens"]; len(got) != 1 || got[0] != "38500" {
		t.Errorf("lower-case x-ratelimit-remaining-tokens = %q, in %v", got, md)
	}
	// A refusal by the tokens sets the tokens' set from the refusal,
	// and the requests' from their decision.
	refused, err := tokens.Allow(context.Background(), "k", 39_000)
	if err != nil || refused.Allowed {
		t.Fatalf("39,000 more tokens: %+v, %v", refused, err)
	}
	rec := httptest.NewRecorder()
	w.WriteDenied(rec, httptest.NewRequest(http.MethodGet, "/", nil), &refused, &dr, &refused)
	if got := rec.Header().Get("X-RateLimit-Remaining-Tokens"); rec.Code != 429 || got != "38500" {
		t.Errorf("a refusal by the tokens: %d, X-RateLimit-Remaining-Tokens %q, want 429, 38500", rec.Code, got)
	}
	if got := rec.Header().Get("X-RateLimit-Remaining-Requests"); got != "59" {
		t.Errorf("a refusal by the tokens: X-RateLimit-Remaining-Requests %q, want 59: every unit's set", got)
	}
	if got := rec.Header().Get("RateLimit"); got != `"requests";r=59;t=30, "tokens-1m";r=38500;t=30, "tokens-1h";r=998500;t=3570` {
		t.Errorf("a refusal by the tokens: RateLimit %q, want every window of both", got)
	}
}

func TestUnitHeadersOptions(t *testing.T) {
	if _, err := New(WithUnitHeaders(), WithoutLegacyHeaders()); !errors.Is(err, ErrInvalidOption) {
		t.Errorf("WithUnitHeaders without the legacy fields: %v, want ErrInvalidOption", err)
	}
	for unit, want := range map[string]string{"requests": "requests", "content-bytes": "content-bytes", "acme-tokens": "tokens", "acme-llm-tokens": "llm-tokens"} {
		if got := refusal.UnitName(unit); got != want {
			t.Errorf("refusal.UnitName(%q) = %q, want %q", unit, got, want)
		}
	}
	w := newWriter(t, WithUnitHeaders(), WithNames(Names{Remaining: "RateLimit-Left"}))
	p := limiter.MustPolicy("bytes", limiter.PerMinute(1<<20)).MustUnit(limiter.UnitContentBytes)
	l, _ := newLimiter(t, p, noon30)
	d := allow(t, l, 1)
	h := http.Header{}
	w.Write(h, &d)
	if got := h.Get("Ratelimit-Left-Content-Bytes"); got != strconv.Itoa(1<<20-1) {
		t.Errorf("a renamed set: %v", h)
	}
}

// Two vendors' units of one name share its set, which describes the most
// restrictive decision of the two, in either order.
func TestUnitsOfOneNameShareASet(t *testing.T) {
	requests, _ := newLimiter(t, limiter.MustPolicy("requests", limiter.PerMinute(60)), noon30)
	ours, _ := newLimiter(t, limiter.MustPolicy("ours", limiter.PerMinute(40_000)).MustUnit("acme-tokens"), noon30)
	theirs, _ := newLimiter(t, limiter.MustPolicy("theirs", limiter.PerMinute(1_000)).MustUnit("model-tokens"), noon30)
	dr := allow(t, requests, 1)
	do, err := ours.Allow(context.Background(), "k", 1500)
	if err != nil {
		t.Fatal(err)
	}
	dt, err := theirs.Allow(context.Background(), "k", 900)
	if err != nil {
		t.Fatal(err)
	}
	w := newWriter(t, WithUnitHeaders())
	for _, ds := range [][]*limiter.Decision{{&dr, &do, &dt}, {&dr, &dt, &do}} {
		h := http.Header{}
		w.Write(h, ds[0], ds...)
		if got := h.Get("X-RateLimit-Remaining-Tokens") + " of " + h.Get("X-RateLimit-Limit-Tokens"); got != "100 of 1000" {
			t.Errorf("tokens set %q, want 100 of 1000: the tighter of the two", got)
		}
	}
}
