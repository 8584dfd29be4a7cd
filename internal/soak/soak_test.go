package soak

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// The shape of the load. Demand (every client in a closed loop, spread at
// random over keys and replicas) is far above keys×limit per window, so
// every whole window of every key must end with exactly limit admissions.
const (
	replicas  = 4
	clients   = 32
	keys      = 8
	limit     = 25
	windowLen = time.Second

	defaultDuration = 30 * time.Second
	shortDuration   = 5 * time.Second
	maxDuration     = 10 * time.Minute
)

// duration is SOAK_DURATION when set, else 5s under -short and 30s
// otherwise.
func duration(t *testing.T) time.Duration {
	t.Helper()
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < windowLen || d > maxDuration {
			t.Fatalf("SOAK_DURATION=%q: want a duration from %v to %v", v, windowLen, maxDuration)
		}
		return d
	}
	if testing.Short() {
		return shortDuration
	}
	return defaultDuration
}

// A replica is one instance of the service: its own Redis client, store,
// limiter, middleware and HTTP server, everything closed when the test
// ends.
type replica struct {
	srv   *httptest.Server
	store *redisstore.Store
}

// startReplica builds a replica on the shared Redis under prefix, with the
// store's defaults (rounds shared, the limiter's clock, fail closed, over-limit
// cache) but a 2s timeout in place of 100ms: on a shared two-core machine
// under -race a starved replica's round trip can pass 100ms, and the
// store would rightly fail closed (a 500). What the store does when Redis
// is slow is the subject of redisstore's fault tests; here a 500 is a bug.
func startReplica(t *testing.T, p *limiter.Policy, prefix string) *replica {
	t.Helper()
	c := redistest.Client(t, redistest.SharedAddr)
	s, err := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatalf("redisstore.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := limiter.New(p, limiter.WithStore(s))
	if err != nil {
		t.Fatalf("limiter.New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	key, err := keyfunc.Header("X-Client")
	if err != nil {
		t.Fatalf("keyfunc.Header: %v", err)
	}
	mw, err := middleware.New(l, middleware.WithKey(key))
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "ok\n")
	})))
	t.Cleanup(srv.Close)
	return &replica{srv: srv, store: s}
}

// A win is one key's window, named by the X-RateLimit-Reset the
// replicas sent for it.
type win struct {
	key   int
	reset int64
}

// tally counts the answers of one window.
type tally struct{ admitted, refused int }

// A run is what one client saw.
type run struct {
	windows           map[win]tally
	admitted, refused []time.Duration // latencies
	errs              int
	firstErrs         []string
}

// fail counts an error and keeps the first few for the report.
func (r *run) fail(format string, args ...any) {
	r.errs++
	if len(r.firstErrs) < 5 {
		r.firstErrs = append(r.firstErrs, fmt.Sprintf(format, args...))
	}
}

// hammer sends requests in a closed loop until end, each to a random
// replica for a random key, and records every answer. The end of the run
// is checked between requests and never cancels one in flight, which
// would count as an error; the client's timeout bounds each request.
func hammer(hc *http.Client, urls []string, seed uint64, end time.Time) *run {
	r := &run{windows: make(map[win]tally)}
	rng := mrand.New(mrand.NewPCG(seed, 0x50a4))
	for time.Now().Before(end) {
		k := rng.IntN(keys)
		req, err := http.NewRequest(http.MethodGet, urls[rng.IntN(len(urls))], nil)
		if err != nil {
			r.fail("new request: %v", err)
			continue
		}
		req.Header.Set("X-Client", "client-"+strconv.Itoa(k))
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			r.fail("GET: %v", err)
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		lat := time.Since(start)
		if err != nil {
			r.fail("read body: %v", err)
			continue
		}
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			r.fail("status %d for client-%d", resp.StatusCode, k)
			continue
		}
		reset, err := strconv.ParseInt(resp.Header.Get("X-RateLimit-Reset"), 10, 64)
		if err != nil {
			r.fail("status %d: X-RateLimit-Reset %q: %v", resp.StatusCode, resp.Header.Get("X-RateLimit-Reset"), err)
			continue
		}
		w := win{k, reset}
		c := r.windows[w]
		if resp.StatusCode == http.StatusOK {
			c.admitted++
			r.admitted = append(r.admitted, lat)
		} else {
			c.refused++
			r.refused = append(r.refused, lat)
		}
		r.windows[w] = c
	}
	return r
}

// percentile returns the nearest-rank q-th percentile of sorted ds.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(q/100*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// TestSoak runs the replicas under load for the soak's duration, then
// checks exact admission per key and window, the absence of errors, and
// logs the latency percentiles.
func TestSoak(t *testing.T) {
	d := duration(t)
	redistest.Shared(t) // fails, never skips, when Redis is away
	var b [6]byte
	rand.Read(b[:])
	prefix := "soak:" + hex.EncodeToString(b[:]) + ":"
	p := limiter.MustPolicy("soak", limiter.Rate{Limit: limit, Window: windowLen})

	reps := make([]*replica, replicas)
	urls := make([]string, replicas)
	for i := range reps {
		reps[i] = startReplica(t, p, prefix)
		urls[i] = reps[i].srv.URL
	}
	tr := &http.Transport{MaxIdleConns: replicas * clients, MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}

	start := time.Now()
	end := start.Add(d)
	runs := make([]*run, clients)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Go(func() { runs[i] = hammer(hc, urls, uint64(i), end) })
	}
	wg.Wait()
	elapsed := time.Since(start)

	windows := make(map[win]tally)
	var admitted, refused []time.Duration
	errs := 0
	for _, r := range runs {
		for w, c := range r.windows {
			s := windows[w]
			s.admitted += c.admitted
			s.refused += c.refused
			windows[w] = s
		}
		admitted = append(admitted, r.admitted...)
		refused = append(refused, r.refused...)
		errs += r.errs
		for _, e := range r.firstErrs {
			t.Errorf("client error: %s", e)
		}
	}
	if errs > 0 {
		t.Errorf("%d requests failed (no error or 5xx is allowed)", errs)
	}

	// Every reset lies within the run: a reset outside it would mean a
	// header that does not name the window.
	lo, hi := start.Unix(), end.Add(windowLen).Unix()+1
	saturated, inexact := 0, 0
	for _, w := range slices.SortedFunc(maps.Keys(windows), func(a, b win) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.reset, b.reset))
	}) {
		c := windows[w]
		switch {
		case w.reset < lo || w.reset > hi:
			inexact++
			t.Errorf("client-%d: X-RateLimit-Reset %d outside the run [%d, %d]", w.key, w.reset, lo, hi)
		case c.admitted > limit:
			inexact++
			t.Errorf("client-%d, window ending %d: %d admitted, want at most %d (%d refused)", w.key, w.reset, c.admitted, limit, c.refused)
		case c.refused > 0 && c.admitted != limit:
			inexact++
			t.Errorf("client-%d, window ending %d: %d admitted with %d refused, want exactly %d", w.key, w.reset, c.admitted, c.refused, limit)
		case c.refused > 0:
			saturated++
		}
	}
	// Exactness must be tested on nearly every window, not on a few: only
	// the partial windows at either end of the run, and one whole window
	// more per key for a cold start, may fall short of the limit.
	if want := keys * (int(d/windowLen) - 2); saturated < want {
		t.Errorf("only %d of %d key-windows saw demand above the limit, want ≥ %d: the load did not test exactness", saturated, len(windows), want)
	}

	var st redisstore.Stats
	for _, r := range reps {
		s := r.store.Stats()
		st.RoundTrips += s.RoundTrips
		st.Decisions += s.Decisions
		st.Cached += s.Cached
		st.Failures += s.Failures
	}
	if st.Failures != 0 {
		t.Errorf("stores: %d decisions Redis could not make, want 0", st.Failures)
	}

	all := slices.Concat(admitted, refused)
	slices.Sort(all)
	slices.Sort(admitted)
	n := len(all)
	if n == 0 {
		t.Fatal("no request was answered")
	}
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) + "ms" }
	t.Logf("soak: %d replicas (own Redis client each), %d clients, %d keys at %d per %v, %v, race=%t: "+
		"%d requests (%.0f/s), %d admitted, %d refused, %d errors; %d key-windows, %d saturated, %d not exact; "+
		"latency p50 %s p99 %s max %s (admitted p50 %s p99 %s); %d Redis round trips for %d decisions, %d refusals from the over-limit cache",
		replicas, clients, keys, limit, windowLen, d, raceDetector,
		n, float64(n)/elapsed.Seconds(), len(admitted), len(refused), errs, len(windows), saturated, inexact,
		ms(percentile(all, 50)), ms(percentile(all, 99)), ms(all[n-1]),
		ms(percentile(admitted, 50)), ms(percentile(admitted, 99)),
		st.RoundTrips, st.Decisions, st.Cached)
}
