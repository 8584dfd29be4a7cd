package main

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestMain fails the package if a goroutine (a store's sweep) outlives the
// tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newTestHandler serves the plans on a fresh store and a fake clock.
func newTestHandler(t *testing.T, at time.Time) (http.Handler, *limitertest.Clock) {
	t.Helper()
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	clk := limitertest.New(at)
	h, closeAll, err := newHandler(limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	return h, clk
}

func get(h http.Handler, apiKey string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, "/api/quote", nil)
	if apiKey != "" {
		r.Header.Set("X-API-Key", apiKey)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// TestEachCustomerAtTheirMidnight: two starter customers, in Paris and in
// Kathmandu, spend their 5 a day; each is refused until their own
// midnight, told so by Retry-After and X-RateLimit-Reset, and admitted
// again from it. Paris's midnight does nothing for Kathmandu. The day is
// the spring-forward one in Paris: 23 hours, the draft's w=82800.
func TestEachCustomerAtTheirMidnight(t *testing.T) {
	paris, kathmandu := storetest.Zone(t, "Europe/Paris"), storetest.Zone(t, "Asia/Kathmandu")
	start := time.Date(2026, 3, 29, 23, 0, 0, 0, paris) // 03:45 on the 30th in Kathmandu
	h, clk := newTestHandler(t, start)
	for _, key := range []string{"key-lumiere", "key-himalaya"} {
		for i := range 5 {
			if w := get(h, key); w.Code != http.StatusOK {
				t.Fatalf("%s request %d: status %d", key, i+1, w.Code)
			}
		}
	}
	parisMidnight := time.Date(2026, 3, 30, 0, 0, 0, 0, paris)
	kathmanduMidnight := time.Date(2026, 3, 31, 0, 0, 0, 0, kathmandu)
	for _, tt := range []struct {
		key   string
		reset time.Time
		w     string
	}{
		{"key-lumiere", parisMidnight, `"starter";q=5;w=82800`},
		{"key-himalaya", kathmanduMidnight, `"starter";q=5;w=86400`},
	} {
		w := get(h, tt.key)
		retry := strconv.FormatInt(int64(tt.reset.Sub(start)/time.Second), 10)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != retry ||
			w.Header().Get("X-RateLimit-Reset") != strconv.FormatInt(tt.reset.Unix(), 10) ||
			w.Header().Get("RateLimit-Policy") != tt.w {
			t.Fatalf("%s, sixth of the day: %d %v; want 429, Retry-After %s, reset %v, policy %s", tt.key, w.Code, w.Header(), retry, tt.reset, tt.w)
		}
	}
	clk.Set(parisMidnight)
	if w := get(h, "key-lumiere"); w.Code != http.StatusOK {
		t.Fatalf("Paris after its midnight: %d, want 200", w.Code)
	}
	if w := get(h, "key-himalaya"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("Kathmandu at Paris's midnight: %d, want 429", w.Code)
	}
	clk.Set(kathmanduMidnight)
	if w := get(h, "key-himalaya"); w.Code != http.StatusOK {
		t.Fatalf("Kathmandu after its midnight: %d, want 200", w.Code)
	}
}

// TestProMonthWithAMinuteUnderIt: a pro customer in Eucla (+8:45) spends
// 20 in a minute, is refused by the minute, not the month, and the month's
// reset is the 1st at 00:00 in Eucla.
func TestProMonthWithAMinuteUnderIt(t *testing.T) {
	eucla := storetest.Zone(t, "Australia/Eucla")
	h, clk := newTestHandler(t, time.Date(2026, 4, 30, 23, 58, 0, 0, eucla))
	for i := range 20 {
		if w := get(h, "key-nullarbor"); w.Code != http.StatusOK {
			t.Fatalf("request %d: %d", i+1, w.Code)
		}
	}
	if w := get(h, "key-nullarbor"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "60" {
		t.Fatalf("21st in a minute: %d, Retry-After %q; want 429 after 60 s", w.Code, w.Header().Get("Retry-After"))
	}
	clk.Advance(time.Minute)
	w := get(h, "key-nullarbor")
	if w.Code != http.StatusOK || w.Header().Get("RateLimit-Policy") != `"pro-month";q=1000;w=2592000, "pro-1m";q=20;w=60` {
		t.Fatalf("the next minute: %d, %v", w.Code, w.Header())
	}
	clk.Set(time.Date(2026, 5, 1, 0, 0, 0, 0, eucla))
	if w := get(h, "key-nullarbor"); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "19" {
		t.Fatalf("May: %d, %v; want the minute's 19 left (the month's 999)", w.Code, w.Header())
	}
}

// TestUnknownKeyIsOnTrial: a key with no account gets the trial, 3 a day
// by UTC; no key at all is the client's mistake.
func TestUnknownKeyIsOnTrial(t *testing.T) {
	h, _ := newTestHandler(t, time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC))
	for i, want := range []int{200, 200, 200, 429} {
		if w := get(h, "key-unknown"); w.Code != want || w.Header().Get("X-RateLimit-Limit") != "3" {
			t.Fatalf("trial request %d: %d, limit %q; want %d, 3", i+1, w.Code, w.Header().Get("X-RateLimit-Limit"), want)
		}
	}
	if w := get(h, ""); w.Code != http.StatusBadRequest {
		t.Fatalf("no API key: %d, want 400", w.Code)
	}
}
