package consumer_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/dunglas/httpsfv"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// sfItem is one item of a structured-field list, as a parser of RFC 9651
// reads it: its token or string, and its parameters.
type sfItem struct {
	name   string
	params map[string]any
}

// parseList parses a field's value with httpsfv, an implementation of
// RFC 9651 of its own, failing t on an error.
func parseList(t *testing.T, field, v string) []sfItem {
	t.Helper()
	list, err := httpsfv.UnmarshalList([]string{v})
	if err != nil {
		t.Fatalf("%s %q: not a structured-field list: %v", field, v, err)
	}
	var out []sfItem
	for _, m := range list {
		it, ok := m.(httpsfv.Item)
		if !ok {
			t.Fatalf("%s %q: member %v is no item", field, v, m)
		}
		var name string
		switch s := it.Value.(type) {
		case string:
			name = s
		case httpsfv.Token:
			name = string(s)
		default:
			t.Fatalf("%s %q: item %v is neither string nor token", field, v, it.Value)
		}
		params := map[string]any{}
		for _, k := range it.Params.Names() {
			params[k], _ = it.Params.Get(k)
		}
		out = append(out, sfItem{name, params})
	}
	return out
}

// newLimiter returns a limiter for p on a fake clock reading at, closed
// when the test ends.
func newLimiter(t *testing.T, p *limiter.Policy, at time.Time) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(p, limiter.WithClock(limitertest.New(at)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// TestDraftFieldsParse: the draft fields of a policy of a month in a
// zone and a minute list both windows, which a parser of RFC 9651 reads
// with their remaining and reset (RateLimit) and quota and window
// (RateLimit-Policy); a policy counting another unit says so (qu), and
// Write lists a second decision's windows after the first's.
func TestDraftFieldsParse(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	at := time.Date(2026, 12, 3, 10, 0, 15, 0, time.UTC)
	plan := newLimiter(t, limiter.MustPolicy("plan", limiter.PerMonthIn(1000, paris), limiter.PerMinute(20)), at)
	tokens := newLimiter(t, limiter.MustPolicy("tokens", limiter.PerMinute(40_000)).MustUnit("acme-tokens"), at)
	var dp limiter.Decision
	for range 3 {
		var err error
		if dp, err = plan.Allow(t.Context(), "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	dt, err := tokens.Allow(t.Context(), "k", 1500)
	if err != nil || !dt.Allowed {
		t.Fatal(dt, err)
	}
	w, err := headers.New(headers.WithDraftHeaders(), headers.WithUnitHeaders())
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	w.Write(h, &dp, &dp, &dt)

	monthEnd := time.Date(2027, 1, 1, 0, 0, 0, 0, paris)
	rl := parseList(t, "RateLimit", h.Get("RateLimit"))
	wantRL := []sfItem{
		{"plan-month", map[string]any{"r": int64(997), "t": int64(monthEnd.Sub(at) / time.Second)}},
		{"plan-1m", map[string]any{"r": int64(17), "t": int64(45)}},
		{"tokens", map[string]any{"r": int64(38_500), "t": int64(45)}},
	}
	checkItems(t, "RateLimit", rl, wantRL)
	pol := parseList(t, "RateLimit-Policy", h.Get("RateLimit-Policy"))
	wantPol := []sfItem{
		{"plan-month", map[string]any{"q": int64(1000), "w": int64(31 * 24 * 3600)}},
		{"plan-1m", map[string]any{"q": int64(20), "w": int64(60)}},
		{"tokens", map[string]any{"q": int64(40_000), "w": int64(60), "qu": "acme-tokens"}},
	}
	checkItems(t, "RateLimit-Policy", pol, wantPol)
	if got := h.Get("X-RateLimit-Remaining-Tokens"); got != "38500" {
		t.Errorf("X-RateLimit-Remaining-Tokens %q, want 38500, as the draft field", got)
	}
}

// checkItems compares parsed items with want, in order.
func checkItems(t *testing.T, field string, got, want []sfItem) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items %+v, want %d %+v", field, len(got), got, len(want), want)
	}
	for i := range want {
		if got[i].name != want[i].name || len(got[i].params) != len(want[i].params) {
			t.Errorf("%s item %d: %+v, want %+v", field, i, got[i], want[i])
			continue
		}
		for k, v := range want[i].params {
			if got[i].params[k] != v {
				t.Errorf("%s item %d (%s): %s=%v (%T), want %v", field, i, got[i].name, k, got[i].params[k], got[i].params[k], v)
			}
		}
	}
}
