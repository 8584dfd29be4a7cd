package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"

	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestMain fails the package if a goroutine (a store's sweep) outlives the
// tests.
func TestMain(m *testing.M) { leakcheck.VerifyTestMain(m) }

// newTestHandler serves the plans on a fresh store and a fake clock.
func newTestHandler(t *testing.T, at time.Time) (http.Handler, *limitertest.Clock) {
	t.Helper()
	s, clk := newTestService(t, at)
	return s.http, clk
}

// newTestService builds the service on a fresh store and a fake clock.
func newTestService(t *testing.T, at time.Time) (*service, *limitertest.Clock) {
	t.Helper()
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	clk := limitertest.New(at)
	s := newService(limiter.WithStore(store), limiter.WithClock(clk))
	t.Cleanup(s.close)
	return s, clk
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
		{"key-lumiere", parisMidnight, `"api-day";q=5;w=82800, `},
		{"key-himalaya", kathmanduMidnight, `"api-day";q=5;w=86400, `},
	} {
		w := get(h, tt.key)
		retry := strconv.FormatInt(int64(tt.reset.Sub(start)/time.Second), 10)
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != retry ||
			w.Header().Get("X-RateLimit-Reset") != strconv.FormatInt(tt.reset.Unix(), 10) ||
			!strings.HasPrefix(w.Header().Get("RateLimit-Policy"), tt.w) {
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
// 20 in a minute, is refused by the minute, not the day or the month, and
// the month's reset is the 1st at 00:00 in Eucla.
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
	if w.Code != http.StatusOK || w.Header().Get("RateLimit-Policy") != `"api-day";q=500;w=86400, "api-month";q=10000;w=2592000, "api-1m";q=20;w=60` ||
		w.Header().Get("RateLimit") != `"api-day";r=479;t=60, "api-month";r=9979;t=60, "api-1m";r=19;t=60` {
		t.Fatalf("the next minute: %d, %v", w.Code, w.Header())
	}
	clk.Set(time.Date(2026, 5, 1, 0, 0, 0, 0, eucla))
	if w := get(h, "key-nullarbor"); w.Code != http.StatusOK || w.Header().Get("X-RateLimit-Remaining") != "19" ||
		!strings.Contains(w.Header().Get("RateLimit"), `"api-month";r=9999;`) {
		t.Fatalf("May: %d, %v; want the minute's 19 left, and the month's 9,999", w.Code, w.Header())
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

// TestUpgradeKeepsUsage: a starter customer spends their 5 of the day,
// is refused, and is moved to pro within the day: their 5 stay used, so
// 495 of pro's 500 are left, not 500. Moved back, they are over the
// starter's day and refused until midnight.
func TestUpgradeKeepsUsage(t *testing.T) {
	paris := storetest.Zone(t, "Europe/Paris")
	h, clk := newTestHandler(t, time.Date(2026, 12, 3, 10, 0, 0, 0, paris))
	for range 5 {
		get(h, "key-lumiere")
		clk.Advance(time.Minute) // under the starter's 5 a minute
	}
	if w := get(h, "key-lumiere"); w.Code != http.StatusTooManyRequests {
		t.Fatalf("the starter's sixth of the day: %d, want 429", w.Code)
	}
	if w := post(h, "key-lumiere", "/plan?to=pro"); w.Code != http.StatusOK {
		t.Fatalf("POST /plan?to=pro: %d %s", w.Code, w.Body)
	}
	w := get(h, "key-lumiere")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("RateLimit"), `"api-day";r=494;`) {
		t.Fatalf("pro, at once: %d, RateLimit %q; want admitted with 494 of 500 left in the day", w.Code, w.Header().Get("RateLimit"))
	}
	u := usageOf(t, h, "key-lumiere")
	if u.Plan != "pro" || u.Rates.Windows[0].Used != 6 || u.Rates.Windows[0].Limit != 500 || u.Rates.Windows[1].Used != 6 {
		t.Fatalf("usage after the move: %+v", u)
	}
	post(h, "key-lumiere", "/plan?to=starter")
	if w := get(h, "key-lumiere"); w.Code != http.StatusTooManyRequests || w.Header().Get("X-RateLimit-Reset") != strconv.FormatInt(time.Date(2026, 12, 4, 0, 0, 0, 0, paris).Unix(), 10) {
		t.Fatalf("back on starter with 6 used of its 5: %d, %v; want 429 until midnight", w.Code, w.Header())
	}
	if w := post(h, "key-lumiere", "/plan?to=gold"); w.Code != http.StatusBadRequest {
		t.Fatalf("an unknown plan: %d, want 400", w.Code)
	}
}

// TestUsageEndpoint: GET /usage shows every window (the month's balance
// beside the minute's) and the exports running, at most pro's 4 at once,
// charging nothing.
func TestUsageEndpoint(t *testing.T) {
	eucla := storetest.Zone(t, "Australia/Eucla")
	h, _ := newTestHandler(t, time.Date(2026, 4, 30, 23, 58, 0, 0, eucla))
	release := make(chan struct{})
	started := make(chan struct{}, 4)
	orig := export
	t.Cleanup(func() { export = orig })
	export = func(http.ResponseWriter, *http.Request) {
		started <- struct{}{}
		<-release
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if w := getPath(h, "key-nullarbor", "/api/export"); w.Code != http.StatusOK {
				t.Errorf("export: %d", w.Code)
			}
		})
	}
	for range 4 {
		<-started
	}
	if w := getPath(h, "key-nullarbor", "/api/export"); w.Code != http.StatusTooManyRequests {
		close(release) // let the exports end, so that the test does
		t.Fatalf("a fifth export at once: %d, want 429", w.Code)
	}
	get(h, "key-nullarbor")
	for range 2 { // reading charges nothing
		u := usageOf(t, h, "key-nullarbor")
		want := []struct {
			window      string
			used, limit int64
		}{{"day@Australia/Eucla", 5, 500}, {"month@Australia/Eucla", 5, 10000}, {"1m0s", 5, 20}}
		if u.Plan != "pro" || u.Zone != "Australia/Eucla" || len(u.Rates.Windows) != 3 || u.Exports.Held != 4 || u.Exports.In.Limit != 4 {
			t.Fatalf("usage %+v: want pro in Eucla, three windows, 4 exports running of 4", u)
		}
		for i, w := range want {
			if got := u.Rates.Windows[i]; got.Window != w.window || got.Used != w.used || got.Limit != w.limit || got.Remaining != w.limit-w.used {
				t.Fatalf("window %d: %+v, want %s with %d of %d used", i, got, w.window, w.used, w.limit)
			}
		}
	}
	close(release)
	wg.Wait()
	if u := usageOf(t, h, "key-nullarbor"); u.Exports.Held != 0 {
		t.Fatalf("exports running after they ended: %d", u.Exports.Held)
	}
	if w := getPath(h, "key-unknown", "/usage"); w.Code != http.StatusNotFound {
		t.Fatalf("usage of a key with no account: %d, want 404", w.Code)
	}
}

// usageJSON is GET /usage's body (middleware.UsageHandler's), its
// resources by name.
type usageJSON struct {
	Plan      string `json:"plan"`
	Zone      string `json:"zone"`
	Resources struct {
		Rates   usageRates   `json:"api"`
		Exports usageExports `json:"exports"`
	} `json:"resources"`
	Rates   usageRates   `json:"-"`
	Exports usageExports `json:"-"`
}

type usageRates struct {
	Windows []struct {
		Window    string `json:"window"`
		Limit     int64  `json:"limit"`
		Used      int64  `json:"used"`
		Remaining int64  `json:"remaining"`
		Reset     string `json:"reset"`
	} `json:"windows"`
}

type usageExports struct {
	Held int64 `json:"-"`
	In   struct {
		Limit, Used, Remaining int64
	} `json:"in_flight"`
}

func usageOf(t *testing.T, h http.Handler, apiKey string) usageJSON {
	t.Helper()
	w := getPath(h, apiKey, "/usage")
	var u usageJSON
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &u) != nil {
		t.Fatalf("GET /usage: %d %s", w.Code, w.Body)
	}
	u.Rates, u.Exports = u.Resources.Rates, u.Resources.Exports
	u.Exports.Held = u.Exports.In.Used
	return u
}

func getPath(h http.Handler, apiKey, path string) *httptest.ResponseRecorder {
	return serve(h, http.MethodGet, apiKey, path)
}

func post(h http.Handler, apiKey, path string) *httptest.ResponseRecorder {
	return serve(h, http.MethodPost, apiKey, path)
}

// serve sends one request of method to path with the API key.
func serve(h http.Handler, method, apiKey, path string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, nil)
	r.Header.Set("X-API-Key", apiKey)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
