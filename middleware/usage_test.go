package middleware_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// usageJSON is the JSON a UsageHandler answers, as docs/middleware.md
// documents it.
type usageJSON struct {
	Plan      string `json:"plan"`
	Zone      string `json:"zone"`
	Resources map[string]struct {
		Policy  string `json:"policy"`
		At      string `json:"at"`
		Windows []struct {
			Window        string `json:"window"`
			Limit         int64  `json:"limit"`
			Used          int64  `json:"used"`
			Remaining     int64  `json:"remaining"`
			Reset         string `json:"reset"`
			WindowSeconds int64  `json:"window_seconds"`
		} `json:"windows"`
		InFlight *struct {
			Limit     int64 `json:"limit"`
			Used      int64 `json:"used"`
			Remaining int64 `json:"remaining"`
		} `json:"in_flight"`
	} `json:"resources"`
}

// draftItems splits a draft RateLimit or RateLimit-Policy field into its
// items, in order: the name, and its parameters.
func draftItems(field string) (names []string, params []map[string]string) {
	for _, item := range strings.Split(field, ", ") {
		parts := strings.Split(item, ";")
		names = append(names, strings.Trim(parts[0], `"`))
		ps := map[string]string{}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			ps[k] = strings.Trim(v, `"`)
		}
		params = append(params, ps)
	}
	return names, params
}

// The usage endpoint answers the customer of the request, under their
// plan and zone, with every rate's windows and every cap of the
// middleware, in the numbers the headers of their next request give
// once it is charged (1, and a slot held while it runs): each draft
// item's q, w, r and t, and X-RateLimit-* of the window with the least
// remaining. A request the middleware cannot key is answered as the
// middleware answers it (400), and a plan that cannot apply as it does
// (500).
func testUsageMatchesHeaders(t *testing.T, store limiter.Store) {
	kolkata, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock(t0.Add(30 * time.Second))
	api, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(5), limiter.PerDayIn(100, time.UTC)),
		limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { api.Close() })
	exports, err := limiter.NewInFlight("exports", 2, limiter.WithStore(store), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exports.Close() })
	pro := &limiter.Plan{Name: "pro", Limits: map[string][]int64{"api": {10, 200}}, Caps: map[string]int64{"exports": 3}}
	hw, err := headers.New(headers.WithDraftHeaders())
	if err != nil {
		t.Fatal(err)
	}
	opts := []middleware.Option{
		middleware.WithKey(keyfunc.Must(keyfunc.Header("X-API-Key"))),
		middleware.WithInFlight(exports, nil),
		middleware.WithHeaders(hw),
		middleware.WithPlans(func(r *http.Request) (*limiter.Plan, string, error) {
			if r.Header.Get("X-API-Key") == "key-broken" {
				return nil, "", nil // a customer of no declared plan
			}
			return pro, kolkata.String(), nil
		}),
	}
	mw, err := middleware.New(api, opts...)
	if err != nil {
		t.Fatal(err)
	}
	usage, err := middleware.NewUsageHandler(api, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var next *httptest.ResponseRecorder
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// The headers as the handler runs: the slot of this request held.
		next = httptest.NewRecorder()
		for k, v := range w.Header() {
			next.Header()[k] = v
		}
	}))
	get := func(h http.Handler, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if key != "" {
			r.Header.Set("X-API-Key", key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for range 3 {
		if w := get(h, "key-asha"); w.Code != http.StatusOK {
			t.Fatalf("request: %d", w.Code)
		}
	}
	w := get(usage, "key-asha")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("usage: %d %q %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var u usageJSON
	if err := json.Unmarshal(w.Body.Bytes(), &u); err != nil {
		t.Fatalf("usage JSON %s: %v", w.Body, err)
	}
	if u.Plan != "pro" || u.Zone != "Asia/Kolkata" || len(u.Resources) != 2 {
		t.Fatalf("usage: plan %q zone %q, %d resources; want pro, Asia/Kolkata, 2: %s", u.Plan, u.Zone, len(u.Resources), w.Body)
	}
	if w := get(h, "key-asha"); w.Code != http.StatusOK {
		t.Fatalf("next request: %d", w.Code)
	}
	now := clk.Now()

	// The draft fields of the next request, item by item.
	names, items := draftItems(next.Header().Get("RateLimit"))
	pnames, pitems := draftItems(next.Header().Get("RateLimit-Policy"))
	var want, wantPolicy []string
	least := int64(-1)
	var xrl [3]string
	for _, win := range u.Resources["api"].Windows {
		reset, err := time.Parse(time.RFC3339, win.Reset)
		if err != nil {
			t.Fatal(err)
		}
		rem := win.Remaining - 1
		want = append(want, fmt.Sprintf("r=%d;t=%d", rem, int64(reset.Sub(now).Seconds())))
		wantPolicy = append(wantPolicy, fmt.Sprintf("q=%d;w=%d", win.Limit, win.WindowSeconds))
		if least < 0 || rem < least {
			least = rem
			xrl = [3]string{strconv.FormatInt(win.Limit, 10), strconv.FormatInt(rem, 10), strconv.FormatInt(reset.Unix(), 10)}
		}
	}
	capU := u.Resources["exports"].InFlight
	want = append(want, fmt.Sprintf("r=%d", capU.Remaining-1))
	wantPolicy = append(wantPolicy, fmt.Sprintf("q=%d", capU.Limit))
	var got, gotPolicy []string
	for i := range items {
		s := "r=" + items[i]["r"]
		if v, ok := items[i]["t"]; ok {
			s += ";t=" + v
		}
		got = append(got, s)
		p := "q=" + pitems[i]["q"]
		if v, ok := pitems[i]["w"]; ok {
			p += ";w=" + v
		}
		gotPolicy = append(gotPolicy, p)
	}
	if strings.Join(got, ", ") != strings.Join(want, ", ") || strings.Join(gotPolicy, ", ") != strings.Join(wantPolicy, ", ") {
		t.Errorf("next request's draft fields %v / %v (items %v, %v); want, from the usage %s: %v / %v",
			got, gotPolicy, names, pnames, w.Body, want, wantPolicy)
	}
	gotX := [3]string{next.Header().Get("X-RateLimit-Limit"), next.Header().Get("X-RateLimit-Remaining"), next.Header().Get("X-RateLimit-Reset")}
	if gotX != xrl {
		t.Errorf("next request's X-RateLimit limit, remaining, reset: got %v, want %v from the usage %s", gotX, xrl, w.Body)
	}

	// What the middleware answers, the usage answers.
	for _, key := range []string{"", "key-broken"} {
		if mwCode, uCode := get(h, key).Code, get(usage, key).Code; uCode != mwCode || uCode < 400 {
			t.Errorf("key %q: usage answered %d, the middleware %d", key, uCode, mwCode)
		}
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if _, err := usage.Report(r); !errors.Is(err, keyfunc.ErrNoKey) {
		t.Errorf("Report of a request without a key: err %v, want keyfunc.ErrNoKey", err)
	}
}

func TestUsageMatchesHeadersMemory(t *testing.T) {
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testUsageMatchesHeaders(t, store)
}

func TestUsageMatchesHeadersRedis(t *testing.T) {
	testUsageMatchesHeaders(t, planStores{name: "redis", replicas: 1, redis: true}.stores(t)[0])
}
