package redis

import (
	"context"
	"crypto/tls"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	goredis "github.com/redis/go-redis/v9"
)

// BenchmarkTLS compares one decision's latency through the store over
// TLS and over plain TCP, on one private redis-server that listens on
// both (a self-signed certificate made for the run), with callers
// goroutines deciding over keys that never reach their limit. It reports
// p50-ns and p99-ns of one decision and decisions/s. Each transport's
// runs follow the other's in one process, on the same server:
//
//	cd bench && go test -run '^$' -bench TLS -benchtime 5000x -count 5 ./redis
func BenchmarkTLS(b *testing.B) {
	srv := redistest.StartTLSServer(b)
	transports := []struct {
		name string
		addr string
		tls  *tls.Config
	}{
		{"tcp", srv.Addr(), nil},
		{"tls", srv.TLSAddr, &tls.Config{RootCAs: srv.Roots, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}},
	}
	for _, callers := range []int{1, 16} {
		for _, tr := range transports {
			b.Run("callers="+strconv.Itoa(callers)+"/"+tr.name, func(b *testing.B) {
				c := goredis.NewClient(&goredis.Options{Addr: tr.addr, TLSConfig: tr.tls, PoolSize: callers, ContextTimeoutEnabled: true})
				b.Cleanup(func() { c.Close() })
				s, err := redisstore.New(c, redisstore.WithTimeout(3*time.Second),
					redisstore.WithPrefix("bench-tls:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":"))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { s.Close() })
				l, err := limiter.New(limiter.MustPolicy("tls", limiter.PerHour(1<<30)), limiter.WithStore(s))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { l.Close() })
				names := keyNames("tls-")
				ctx := context.Background()
				// Warm the pool: no handshake inside the timed part.
				var wg sync.WaitGroup
				for i := range callers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						if _, err := l.Allow(ctx, names[i], 1); err != nil {
							b.Error(err)
						}
					}()
				}
				wg.Wait()
				procs := runtime.GOMAXPROCS(0)
				b.SetParallelism((callers + procs - 1) / procs)
				var (
					seq  atomic.Int64
					mu   sync.Mutex
					hist latencies
				)
				b.ResetTimer()
				start := time.Now()
				b.RunParallel(func(pb *testing.PB) {
					var h latencies
					i := int(seq.Add(1)) * 7919
					for pb.Next() {
						i++
						t := time.Now()
						if _, err := l.Allow(ctx, names[i%len(names)], 1); err != nil {
							b.Error(err)
							return
						}
						h.add(time.Since(t))
					}
					mu.Lock()
					hist.merge(&h)
					mu.Unlock()
				})
				el := time.Since(start)
				b.StopTimer()
				b.ReportMetric(float64(hist.quantile(0.50)), "p50-ns")
				b.ReportMetric(float64(hist.quantile(0.99)), "p99-ns")
				b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
			})
		}
	}
}
