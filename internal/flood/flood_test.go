package flood

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// The flood: one address sends requests that each carry an API key never
// seen before, at most floodRequests of them, from floodWorkers
// goroutines, straight into the handler (the store's Redis is on
// loopback).
const (
	floodRequests = 20_000
	floodWorkers  = 16
	attacker      = "198.51.100.7"
	honest        = "203.0.113.9"

	perAddressLimit = 100 // per minute
	perKeyLimit     = 10  // per minute
)

// stack is the recommended middleware: a per-address limiter ahead of the
// per-key one, both on store.
func stack(t *testing.T, store *redisstore.Store) http.Handler {
	t.Helper()
	perAddress := newLimiter(t, limiter.MustPolicy("per-address", limiter.PerMinute(perAddressLimit)), store)
	perKey := newLimiter(t, limiter.MustPolicy("per-key", limiter.PerMinute(perKeyLimit)), store)
	byKey, err := keyfunc.Header("X-Api-Key")
	if err != nil {
		t.Fatal(err)
	}
	mw, err := middleware.New(perAddress, middleware.WithLimiter(perKey, byKey))
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

// perKeyOnly is the middleware of the issue: keyed by the API key alone.
func perKeyOnly(t *testing.T, store *redisstore.Store) http.Handler {
	t.Helper()
	perKey := newLimiter(t, limiter.MustPolicy("per-key", limiter.PerMinute(perKeyLimit)), store)
	byKey, err := keyfunc.Header("X-Api-Key")
	if err != nil {
		t.Fatal(err)
	}
	mw, err := middleware.New(perKey, middleware.WithKey(byKey))
	if err != nil {
		t.Fatalf("middleware.New: %v", err)
	}
	return mw(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
}

// get sends one request from addr with API key k and returns its status.
func get(h http.Handler, addr, k string) int {
	r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
	r.RemoteAddr = addr + ":40000"
	r.Header.Set("X-Api-Key", k)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// flood sends floodRequests requests from the attacker, each with a
// fresh API key, and returns how many got each status. When during is
// set, it is called once the first 500 answers, concurrently with the
// flood, which goes on (to at most twice floodRequests) until during
// returns; duringCodes is what during returned.
func flood(h http.Handler, during func() map[int]int) (codes, duringCodes map[int]int) {
	var mu sync.Mutex
	codes = map[int]int{}
	failing := make(chan struct{})
	var wg sync.WaitGroup
	next := make(chan int)
	for range floodWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				code := get(h, attacker, "minted-"+apiKey(i))
				mu.Lock()
				codes[code]++
				if code == http.StatusInternalServerError && codes[code] == 1 {
					close(failing)
				}
				mu.Unlock()
			}
		}()
	}
	// done delivers during's statuses; it stays nil (never ready) without
	// during.
	var done chan map[int]int
	stop := make(chan struct{})
	if during != nil {
		done = make(chan map[int]int, 1)
		go func() {
			select {
			case <-failing:
				done <- during()
			case <-stop:
				done <- nil
			}
		}()
	}
	returned := during == nil
	for i := 0; i < 2*floodRequests && (i < floodRequests || !returned); i++ {
		select {
		case next <- i:
		case duringCodes = <-done:
			done, returned = nil, true
		}
	}
	close(next)
	wg.Wait()
	close(stop)
	if !returned {
		duringCodes = <-done
	}
	return codes, duringCodes
}

// TestPerAddressLimiterBoundsFlood floods a Redis of 6 MB under
// noeviction, the server's default policy, through a per-address limiter
// ahead of the per-key one: the flood mints at most the address's limit
// of per-key counters, so Redis holds perAddressLimit + 1 keys, never
// fills, and an honest client is served throughout.
func TestPerAddressLimiterBoundsFlood(t *testing.T) {
	c := startRedis(t, "6mb", "noeviction")
	h := stack(t, newStore(t, c))

	codes, _ := flood(h, nil)
	if codes[http.StatusOK] != perAddressLimit || codes[http.StatusTooManyRequests] != floodRequests-perAddressLimit {
		t.Errorf("flood of %d fresh keys from one address: got statuses %v, want %d × 200 and the rest 429",
			floodRequests, codes, perAddressLimit)
	}
	perKey := scanKeys(t, c, prefix+"{hdr:X-Api-Key:*")
	perAddr := scanKeys(t, c, prefix+"{"+attacker+"}*")
	if len(perKey) != perAddressLimit || len(perAddr) != 1 {
		t.Errorf("got %d per-key and %d per-address keys in Redis, want %d and 1", len(perKey), len(perAddr), perAddressLimit)
	}
	if got := get(h, honest, "honest-key"); got != http.StatusOK {
		t.Errorf("honest client after the flood: got %d, want 200", got)
	}
	t.Logf("flood statuses %v; Redis keys %d, used_memory %d B",
		codes, len(scanKeys(t, c, prefix+"*")), info(t, c, "memory", "used_memory"))
}

// TestPerKeyFloodUnderNoeviction is the failure, kept as measured
// behaviour: keyed by the API key alone, under noeviction with a small
// maxmemory (3 MB here, to be quick), the flood fills Redis; from then on
// Redis stays at its bound, and the decisions that would charge fail with
// OOM, the flood's and honest clients' alike (a 500), while refusals,
// which write nothing, still answer. Redis hovers at its bound (a write
// fits whenever connection buffers shrink), so the share of honest
// requests refused varies: 71 to 199 of 200 in the runs measured.
func TestPerKeyFloodUnderNoeviction(t *testing.T) {
	c := startRedis(t, "3mb", "noeviction")
	h := perKeyOnly(t, newStore(t, c))
	if got := get(h, honest, "honest-key"); got != http.StatusOK {
		t.Fatalf("honest client before the flood: got %d, want 200", got)
	}

	const honestRequests = 200
	honestClients := func() map[int]int {
		codes := map[int]int{}
		for i := range honestRequests {
			k := "honest-key"
			if i%2 == 1 {
				k = "new-honest-" + strconv.Itoa(i)
			}
			codes[get(h, honest, k)]++
		}
		return codes
	}
	codes, honestCodes := flood(h, honestClients)
	full := len(scanKeys(t, c, prefix+"*"))
	if codes[http.StatusInternalServerError] < floodRequests/4 {
		t.Fatalf("flood of %d fresh keys into 3 MB: got statuses %v, want at least %d × 500 (OOM)", floodRequests, codes, floodRequests/4)
	}
	if failed := honestCodes[http.StatusInternalServerError]; failed < honestRequests/4 {
		t.Errorf("honest clients during the flood at maxmemory: got statuses %v, want at least %d × 500 (OOM)",
			honestCodes, honestRequests/4)
	}
	t.Logf("flood statuses %v; Redis full at %d keys, used_memory %d B; honest clients then: %v",
		codes, full, info(t, c, "memory", "used_memory"), honestCodes)
}
