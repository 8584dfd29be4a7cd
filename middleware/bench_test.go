package middleware_test

import (
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// benchClients is how many client addresses the benchmark rotates through.
const benchClients = 10_000

// clientRequests returns n GET requests from n distinct IPv4 addresses.
func clientRequests(n int) []*http.Request {
	reqs := make([]*http.Request, n)
	for i := range reqs {
		r, err := http.NewRequest(http.MethodGet, "http://example.test/api/items", nil)
		if err != nil {
			panic(err)
		}
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":" + strconv.Itoa(40000+i%20000)
		reqs[i] = r
	}
	return reqs
}

// benchWriter is a ResponseWriter that keeps one header map per goroutine,
// emptied before every request as a server's fresh map would be, and
// counts answers other than 200.
type benchWriter struct {
	h     http.Header
	notOK int
}

func (w *benchWriter) Header() http.Header { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) {
	return len(p), nil
}
func (w *benchWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.notOK++
	}
}

// serveParallel sends the requests through h from b.RunParallel's
// goroutines, each starting at its own place in the rotation, and fails
// the benchmark if any answer was not 200.
func serveParallel(b *testing.B, h http.Handler, reqs []*http.Request) {
	var start, refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu0, cpuOK := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		w := &benchWriter{h: make(http.Header, 8)}
		i := int(start.Add(7919))
		for pb.Next() {
			clear(w.h)
			h.ServeHTTP(w, reqs[i%len(reqs)])
			i++
		}
		refused.Add(int64(w.notOK))
	})
	if cpu1, ok := cpuTime(); ok && cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/float64(b.N), "cpu-ns/op")
	}
	if n := refused.Load(); n > 0 {
		b.Fatalf("%d requests were not answered 200; the benchmark measures the allow path", n)
	}
}

// BenchmarkMiddleware measures the middleware's whole cost over a bare
// handler on the allow path: 10,000 client addresses, the in-memory store,
// a policy no client reaches. Subtract handler=bare from the others.
func BenchmarkMiddleware(b *testing.B) {
	reqs := clientRequests(benchClients)
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	l, err := limiter.New(limiter.MustPolicy("bench", limiter.PerMinute(100_000_000_000)))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	plain, err := middleware.New(l)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("handler=bare", func(b *testing.B) { serveParallel(b, bare, reqs) })
	b.Run("handler=middleware", func(b *testing.B) { serveParallel(b, plain(bare), reqs) })
	// With an in-flight cap per client address beside the rate, on the
	// memory store: one slot taken and given back per request.
	f, err := limiter.NewInFlight("bench-slots", 1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	capped, err := middleware.New(l, middleware.WithInFlight(f, nil))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("handler=middleware,inflight", func(b *testing.B) { serveParallel(b, capped(bare), reqs) })
	// handler=middleware+metrics is measured in the adapters' modules:
	// middleware/metrics and middleware/otelmetrics, BenchmarkMiddleware.

	// The parts of the cost: the same middleware keyed by the bare host
	// (a substring of RemoteAddr: no parse, no allocation), and without
	// the X-RateLimit-* headers on admissions.
	noHeaders, err := headers.New(headers.WithoutLegacyHeaders())
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name string
		opts []middleware.Option
	}{
		{"key=host", []middleware.Option{middleware.WithKey(hostKey)}},
		{"headers=off", []middleware.Option{middleware.WithHeaders(noHeaders)}},
		{"key=host,headers=off", []middleware.Option{middleware.WithKey(hostKey), middleware.WithHeaders(noHeaders)}},
	} {
		mw, err := middleware.New(l, v.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("handler=middleware,"+v.name, func(b *testing.B) { serveParallel(b, mw(bare), reqs) })
	}
}

// hostKey keys by the host part of RemoteAddr, unchecked and unprefixed:
// a yardstick for keyfunc.RemoteHost's cost, not a key to deploy.
func hostKey(r *http.Request) (string, error) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	return host, err
}
