package middleware_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A service is what a reload builds again: its limiters and the
// middleware over them, on a store that outlives it.
type service struct {
	rate *limiter.Limiter
	cap  *limiter.InFlight
	h    http.Handler
}

// newService builds the service on store, replacing old (nil: the first
// build), with the rate limit given (a reload may change it).
func newService(t *testing.T, store limiter.Store, clk limiter.Clock, limit int64, old *service) *service {
	t.Helper()
	ropts := []limiter.Option{limiter.WithStore(store), limiter.WithClock(clk)}
	copts := ropts
	if old != nil {
		ropts = append(ropts[:2:2], limiter.WithReplace(old.rate))
		copts = append(copts[:2:2], limiter.WithReplace(old.cap))
	}
	rate, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(limit)), ropts...)
	if err != nil {
		t.Fatalf("build the service's limiter: %v", err)
	}
	capped, err := limiter.NewInFlight("api-at-once", 64, copts...)
	if err != nil {
		t.Fatalf("build the service's cap: %v", err)
	}
	mw, err := middleware.New(rate, middleware.WithInFlight(capped, nil))
	if err != nil {
		t.Fatal(err)
	}
	return &service{rate: rate, cap: capped, h: mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))}
}

// close closes the build, and reports whether it closed cleanly.
func (s *service) close() error {
	return errors.Join(s.rate.Close(), s.cap.Close())
}

// A generation is one build of the service and the requests it took, so
// that a swap closes the old build only once they have ended: a request
// that picked the old handler before the swap still runs on it.
type generation struct {
	s  *service
	mu sync.RWMutex // read-held by each request on s; write-held to close s
}

// swapper serves the current generation, as a service's reload would.
type swapper struct {
	cur    atomic.Pointer[generation]
	closed error // the last old build's Close
}

func (sw *swapper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	for {
		g := sw.cur.Load()
		g.mu.RLock()
		if sw.cur.Load() == g {
			defer g.mu.RUnlock()
			g.s.h.ServeHTTP(w, r)
			return
		}
		g.mu.RUnlock() // swapped meanwhile: take the new one
	}
}

// swap serves s from now on, and closes the build it replaced once the
// requests that build took have ended.
func (sw *swapper) swap(s *service) {
	old := sw.cur.Swap(&generation{s: s})
	if old == nil {
		return
	}
	old.mu.Lock()
	sw.closed = old.s.close()
	old.mu.Unlock()
}

// A service built again over its store while requests flow from several
// goroutines takes over its limiters' claims, counts what the old build
// counted, and closes the old build without an error: each window admits
// exactly its limit, before, across and after the reload, and no request
// fails.
func testReloadUnderLoad(t *testing.T, store limiter.Store) {
	const (
		limit   = 40
		workers = 8
		perEach = 15 // 120 requests a window: 40 admitted, 80 refused
		windows = 3
	)
	clk := limitertest.New(t0.Add(-time.Minute))
	var sw swapper
	first := newService(t, store, clk, limit, nil)
	sw.swap(first)
	var last *service
	for w := range windows {
		clk.Set(t0.Add(time.Duration(w) * time.Minute))
		var ok, refused, failed atomic.Int64
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range perEach {
					rec := httptest.NewRecorder()
					sw.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
					switch rec.Code {
					case http.StatusOK:
						ok.Add(1)
					case http.StatusTooManyRequests:
						refused.Add(1)
					default:
						failed.Add(1)
					}
				}
			})
		}
		if w == 1 { // the reload, amid the window's requests
			wg.Go(func() {
				for ok.Load()+refused.Load() < workers*perEach/4 {
					runtime.Gosched() // until a quarter of them are answered
				}
				last = newService(t, store, clk, limit, first)
				sw.swap(last)
			})
		}
		wg.Wait()
		if sw.closed != nil {
			t.Fatalf("window %d: the old build's Close: %v", w, sw.closed)
		}
		if ok.Load() != limit || refused.Load() != workers*perEach-limit || failed.Load() != 0 {
			t.Fatalf("window %d: %d admitted, %d refused, %d failed; want %d, %d, 0",
				w, ok.Load(), refused.Load(), failed.Load(), limit, workers*perEach-limit)
		}
	}
	// The accidental case stays refused: a route given the policy of the
	// live build without naming it.
	if _, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(limit)), limiter.WithStore(store)); err == nil {
		t.Fatal("a second limiter of the live build's policy, naming nothing, was accepted")
	}
	if err := last.close(); err != nil {
		t.Fatal(err)
	}
}

func TestReloadUnderLoadMemory(t *testing.T) {
	store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testReloadUnderLoad(t, store)
}

func TestReloadUnderLoadRedis(t *testing.T) {
	prefix := fmt.Sprintf("mwreload-%d:", time.Now().UnixNano())
	store, err := redisstore.New(redistest.Shared(t), redisstore.WithPrefix(prefix), redisstore.WithTimeout(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	testReloadUnderLoad(t, store)
}
