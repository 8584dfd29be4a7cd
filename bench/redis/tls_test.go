package redis

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
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
	dir := b.TempDir()
	pool := writeCert(b, dir)
	tlsPort := redistest.FreePort(b)
	srv := redistest.StartServer(b, "--tls-port", strconv.Itoa(tlsPort),
		"--tls-cert-file", filepath.Join(dir, "cert.pem"), "--tls-key-file", filepath.Join(dir, "key.pem"),
		"--tls-ca-cert-file", filepath.Join(dir, "cert.pem"), "--tls-auth-clients", "no")
	transports := []struct {
		name string
		addr string
		tls  *tls.Config
	}{
		{"tcp", srv.Addr(), nil},
		{"tls", "127.0.0.1:" + strconv.Itoa(tlsPort), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}},
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

// writeCert writes a self-signed certificate for 127.0.0.1 and its key
// to dir (cert.pem, key.pem) and returns a pool that trusts it.
func writeCert(b *testing.B, dir string) *x509.CertPool {
	b.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		b.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		b.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if err := os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "key.pem"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}
