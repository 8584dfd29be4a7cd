package metrics_test

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/metrics"
)

// BenchmarkObserve measures one event, the cost the adapter adds to
// every request: an admission timed at 40µs.
func BenchmarkObserve(b *testing.B) {
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	e := middleware.Event{Policy: limiter.MustPolicy("api", limiter.PerMinute(100)), Outcome: middleware.Allowed, Duration: 40 * time.Microsecond}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			m.Observe(e)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				m.Observe(e)
			}
		})
	})
}

// BenchmarkMiddleware measures the middleware with and without the
// adapter on the allow path: 10,000 client addresses, the in-memory
// store, a policy no client reaches. It was middleware's
// handler=middleware+metrics, moved here with the adapter's module.
func BenchmarkMiddleware(b *testing.B) {
	const clients = 10_000
	reqs := make([]*http.Request, clients)
	for i := range reqs {
		r, err := http.NewRequest(http.MethodGet, "http://example.test/api/items", nil)
		if err != nil {
			b.Fatal(err)
		}
		r.RemoteAddr = "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255) + ":" + strconv.Itoa(40000+i%20000)
		reqs[i] = r
	}
	l, err := limiter.New(limiter.MustPolicy("bench", limiter.PerMinute(100_000_000_000)))
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	m, err := metrics.New(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	bare := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	for _, v := range []struct {
		name string
		opts []middleware.Option
	}{
		{"middleware", nil},
		{"middleware+metrics", []middleware.Option{middleware.WithObserver(m.Observe)}},
	} {
		mw, err := middleware.New(l, v.opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("handler="+v.name, func(b *testing.B) { serveParallel(b, mw(bare), reqs) })
	}
}

// serveParallel sends reqs through h from b.RunParallel's goroutines,
// each from its own place in the rotation, and fails the benchmark if an
// answer was not 200.
func serveParallel(b *testing.B, h http.Handler, reqs []*http.Request) {
	var start, refused atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
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
	if n := refused.Load(); n > 0 {
		b.Fatalf("%d requests were not answered 200; the benchmark measures the allow path", n)
	}
}

// benchWriter keeps one header map per goroutine and counts answers
// other than 200.
type benchWriter struct {
	h     http.Header
	notOK int
}

func (w *benchWriter) Header() http.Header         { return w.h }
func (w *benchWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *benchWriter) WriteHeader(code int) {
	if code != http.StatusOK {
		w.notOK++
	}
}
