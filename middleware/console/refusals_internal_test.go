package console

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// flood hands rec distinct refusals of a key each and heavy refusals
// of each of the heavy keys, shuffled, dated from at on, 100 a
// millisecond, as api's minute window refuses them.
func flood(rec *Refusals, api *limiter.Limiter, at time.Time, distinct, heavy int, heavyKeys ...string) {
	var keys []string
	for i := range distinct {
		keys = append(keys, "flood-"+strconv.Itoa(i))
	}
	for _, k := range heavyKeys {
		for range heavy {
			keys = append(keys, k)
		}
	}
	r := rand.New(rand.NewPCG(4, 5))
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, k := range keys {
		now := at.Add(time.Duration(i/100) * time.Millisecond)
		reset := now.Truncate(time.Minute).Add(time.Minute)
		d := limiter.Dated(limiter.Decision{Limit: 5, Window: time.Minute, ResetAt: reset, RetryAfter: reset.Sub(now), Policy: api.Policy()}, now)
		rec.Observe(middleware.Event{Outcome: middleware.Denied, Key: k, Policy: api.Policy(), Decision: d})
	}
}

// floodFixture returns a console on api (5 a minute) with rec, on a
// fake clock at at.
func floodFixture(t *testing.T, rec *Refusals, at time.Time) (http.Handler, *limiter.Limiter, *limitertest.Clock) {
	t.Helper()
	clk := limitertest.New(at)
	api := limiter.MustNew(limiter.MustPolicy("api", limiter.PerMinute(5)), limiter.WithClock(clk))
	t.Cleanup(func() { api.Close() })
	h, err := New(Config{
		Authorize: func(*http.Request) (string, Access) { return "vera@support", Look },
		Observe:   func(Event) {},
		Limiters:  []*limiter.Limiter{api},
		Refusals:  rec,
	})
	if err != nil {
		t.Fatal(err)
	}
	return h, api, clk
}

// TestLimitedUnderFlood: 100,000 distinct keys refused once each and 3
// keys refused 2,000 times each, shuffled: the sketch of 1,000 keys
// stays at 1,000, and the list of keys limited now, read by a person
// who may only look, starts with the 3.
func TestLimitedUnderFlood(t *testing.T) {
	at := time.Date(2026, 7, 31, 3, 12, 0, 0, time.UTC)
	rec, err := NewRefusals(RefusalsConfig{Keys: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	h, api, clk := floodFixture(t, rec, at)
	flood(rec, api, at, 100_000, 2000, "heavy-a", "heavy-b", "heavy-c")
	if n := rec.sketch.Len(); n != 1000 {
		t.Fatalf("the sketch holds %d keys after 106,000 refusals of 100,003 keys, want its capacity 1,000", n)
	}
	clk.Set(at.Add(2 * time.Second)) // the flood lasted 1.06 s
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin/limits/limited", nil))
	var v limitedView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	if len(v.Keys) != maxLimited {
		t.Fatalf("%d keys listed, want %d", len(v.Keys), maxLimited)
	}
	top := map[string]int64{}
	for _, k := range v.Keys[:3] {
		top[k.Key] = k.Count
	}
	for _, k := range []string{"heavy-a", "heavy-b", "heavy-c"} {
		if top[k] < 2000 {
			t.Errorf("top 3 %v: %s counted %d, want at least 2000", top, k, top[k])
		}
	}
}

// commandCalls returns how many times server at addr ran each command,
// by INFO commandstats.
func commandCalls(t *testing.T, addr string) map[string]int64 {
	t.Helper()
	c := redistest.Client(t, addr)
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		// cmdstat_set:calls=3,usec=12,...
		name, rest, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		calls[name] = n
	}
	return calls
}

// TestFloodWritesOncePerSecond: 106,000 refusals handed to a replica
// sharing through its own Redis (a private server: nothing else writes
// to it) cost one write of the summary per second of the flood and
// the Flush after it, never one per refusal.
func TestFloodWritesOncePerSecond(t *testing.T) {
	srv := redistest.StartServer(t)
	rec, err := NewRefusals(RefusalsConfig{Keys: 1000, Redis: redistest.Client(t, srv.Addr())})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	at := time.Date(2026, 7, 31, 3, 12, 0, 0, time.UTC)
	_, api, _ := floodFixture(t, rec, at)
	before := commandCalls(t, srv.Addr())
	start := time.Now()
	flood(rec, api, at, 100_000, 2000, "heavy-a", "heavy-b", "heavy-c")
	if err := rec.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after := commandCalls(t, srv.Addr())
	sets := after["set"] - before["set"]
	most := int64(took/shareEvery) + 2 // one per second begun, and the Flush
	if sets < 1 || sets > most {
		t.Fatalf("%d summaries written for 106,000 refusals in %v, want 1 to %d", sets, took, most)
	}
	var writes int64
	for cmd, n := range after {
		if cmd != "info" && cmd != "hello" && cmd != "client|setinfo" && cmd != "ping" {
			writes += n - before[cmd]
		}
	}
	if writes != 4*sets {
		t.Fatalf("%d commands for %d summaries: %v, want 4 each (SET, ZADD, ZREMRANGEBYSCORE, PEXPIRE)", writes, sets, diff(before, after))
	}
	t.Logf("%d summaries written in %v for 106,000 refusals", sets, took)
}

func diff(before, after map[string]int64) string {
	var b strings.Builder
	for cmd, n := range after {
		if n != before[cmd] {
			fmt.Fprintf(&b, "%s:%d ", cmd, n-before[cmd])
		}
	}
	return b.String()
}

// TestRefusalFarAheadForgetsNoOther: a refusal dated ten years ahead
// (a limiter whose clock is wrong) among refusals of this process's
// present is counted, and the others are still listed as limited now:
// the refusals age by their instants only up to a minute past this
// process's clock.
func TestRefusalFarAheadForgetsNoOther(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	rec, err := NewRefusals(RefusalsConfig{Keys: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	h, api, clk := floodFixture(t, rec, now)
	flood(rec, api, now.Add(-10*time.Second), 0, 3, "real-a", "real-b")
	flood(rec, api, now.AddDate(10, 0, 0), 0, 1, "skewed")
	flood(rec, api, now.Add(-5*time.Second), 0, 1, "real-c")
	clk.Set(now)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/admin/limits/limited", nil))
	var v limitedView
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %s: %v", w.Code, w.Body, err)
	}
	listed := map[string]int64{}
	for _, k := range v.Keys {
		listed[k.Key] = k.Count
	}
	for k, want := range map[string]int64{"real-a": 3, "real-b": 3, "real-c": 1} {
		if listed[k] != want {
			t.Errorf("%s listed with %d refusals, want %d (listed: %v)", k, listed[k], want, listed)
		}
	}
}
