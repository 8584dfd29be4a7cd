package middleware

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/httplimit"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/throttled/throttled/v2"
	throttledmem "github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ululestdlib "github.com/ulule/limiter/v3/drivers/middleware/stdlib"
	ululemem "github.com/ulule/limiter/v3/drivers/store/memory"

	"github.com/fixedwindow/ratelimit/internal/testfixture"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// The workload: 10,000 client addresses, a limit per client and minute so
// high that every request is allowed, each library with its in-memory
// store and its own key-by-IP function, writing its rate-limit headers.
const (
	clients    = 10_000
	benchLimit = 1_000_000_000
	window     = time.Minute
)

// A peer builds one library's middleware around next; stop releases it.
type peer struct {
	name  string
	build func(tb testing.TB, next http.Handler) (h http.Handler, stop func())
}

// peersWithLimit returns every library configured for limit requests per
// client and window.
func peersWithLimit(limit int64) []peer {
	return []peer{
		{"fixedwindow", func(tb testing.TB, next http.Handler) (http.Handler, func()) {
			l, err := limiter.New(limiter.MustPolicy("bench", limiter.Rate{Limit: limit, Window: window}))
			if err != nil {
				tb.Fatal(err)
			}
			mw, err := middleware.New(l)
			if err != nil {
				tb.Fatal(err)
			}
			return mw(next), func() { _ = l.Close() }
		}},
		{"sethvargo", func(tb testing.TB, next http.Handler) (http.Handler, func()) {
			store, err := memorystore.New(&memorystore.Config{Tokens: uint64(limit), Interval: window})
			if err != nil {
				tb.Fatal(err)
			}
			mw, err := httplimit.NewMiddleware(store, httplimit.IPKeyFunc())
			if err != nil {
				tb.Fatal(err)
			}
			return mw.Handle(next), func() { _ = store.Close(context.Background()) }
		}},
		{"ulule", func(tb testing.TB, next http.Handler) (http.Handler, func()) {
			l := ulule.New(ululemem.NewStore(), ulule.Rate{Period: window, Limit: limit})
			return ululestdlib.NewMiddleware(l).Handler(next), func() {}
		}},
		{"throttled", func(tb testing.TB, next http.Handler) (http.Handler, func()) {
			store, err := throttledmem.NewCtx(4 * clients)
			if err != nil {
				tb.Fatal(err)
			}
			rl, err := throttled.NewGCRARateLimiterCtx(store, throttled.RateQuota{MaxRate: throttled.PerMin(int(limit)), MaxBurst: int(limit) - 1})
			if err != nil {
				tb.Fatal(err)
			}
			mw := &throttled.HTTPRateLimiterCtx{RateLimiter: rl, VaryBy: &throttled.VaryBy{RemoteAddr: true}}
			return mw.RateLimit(next), func() {}
		}},
		{"httprate", func(tb testing.TB, next http.Handler) (http.Handler, func()) {
			return httprate.LimitBy(int(limit), window, httprateKeyByIP)(next), func() {}
		}},
	}
}

// httprateKeyByIP is httprate.KeyByIP, deprecated because behind a proxy
// RemoteAddr is the proxy's; here it is the client's, as for every peer.
func httprateKeyByIP(r *http.Request) (string, error) {
	ip, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		ip = r.RemoteAddr
	}
	return httprate.CanonicalizeIP(ip), nil
}

// clientRequests returns n GET requests from n distinct IPv4 addresses.
func clientRequests(tb testing.TB, n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		r, err := http.NewRequest(http.MethodGet, "http://example.test/api/items", nil)
		if err != nil {
			tb.Fatal(err)
		}
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":" + strconv.Itoa(40000+i%20000)
		reqs[i] = r
	}
	return reqs
}

// writer keeps one header map per goroutine, emptied before every request
// as a server's fresh map would be, and counts answers other than 200.
type writer struct {
	h     http.Header
	notOK int
}

func (w *writer) Header() http.Header         { return w.h }
func (w *writer) Write(p []byte) (int, error) { return len(p), nil }
func (w *writer) WriteHeader(code int) {
	if code != http.StatusOK {
		w.notOK++
	}
}

var bare = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})

// BenchmarkPeers runs the same allow-path workload through a bare handler
// and through each library's middleware around it, in one run, so that
// each library's overhead is its figure minus handler=bare's.
func BenchmarkPeers(b *testing.B) {
	reqs := clientRequests(b, clients)
	b.Run("handler=bare", func(b *testing.B) { serveParallel(b, bare, reqs) })
	for _, p := range peersWithLimit(benchLimit) {
		b.Run("handler="+p.name, func(b *testing.B) {
			h, stop := p.build(b, bare)
			defer stop()
			serveParallel(b, h, reqs)
		})
	}
}

func serveParallel(b *testing.B, h http.Handler, reqs []*http.Request) {
	var start, refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := testfixture.CPUTime()
	b.RunParallel(func(pb *testing.PB) {
		w := &writer{h: make(http.Header, 8)}
		i := int(start.Add(7919))
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
		refused.Add(int64(w.notOK))
	})
	if cpu1, ok := testfixture.CPUTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if n := refused.Load(); n > 0 {
		b.Fatalf("%d requests were not answered 200; the benchmark measures the allow path", n)
	}
}

// TestPeersAllowThenRefuse checks that every peer is wired as a limit by
// client address before its speed means anything: with a limit of 3, a
// client's fourth request is refused and another client's first is not.
func TestPeersAllowThenRefuse(t *testing.T) {
	for _, p := range peersWithLimit(3) {
		t.Run(p.name, func(t *testing.T) {
			h, stop := p.build(t, bare)
			defer stop()
			for i, tc := range []struct {
				addr string
				want int
			}{{"10.0.0.1:1", 200}, {"10.0.0.1:2", 200}, {"10.0.0.1:3", 200}, {"10.0.0.1:4", 429}, {"10.0.0.2:1", 200}} {
				r, err := http.NewRequest(http.MethodGet, "http://example.test/", nil)
				if err != nil {
					t.Fatal(err)
				}
				r.RemoteAddr = tc.addr
				w := &writer{h: http.Header{}}
				h.ServeHTTP(w, r)
				got := 200
				if w.notOK > 0 {
					got = 429
				}
				if got != tc.want {
					t.Errorf("request %d from %s: %d, want %d", i+1, tc.addr, got, tc.want)
				}
				if w.h.Get("X-RateLimit-Limit") == "" && w.h.Get("X-Ratelimit-Limit") == "" {
					t.Errorf("request %d: no X-RateLimit-Limit header", i+1)
				}
			}
		})
	}
}
