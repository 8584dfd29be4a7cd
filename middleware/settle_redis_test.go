package middleware_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
)

// A replica is one instance of a service metering tokens and bytes, with
// a Redis store of its own on the shared Redis.
type replica struct {
	requests, tokens, bytes *limiter.Limiter
	h                       http.Handler
}

// newReplicas returns n replicas on one prefix and one clock; the first
// reaches Redis through first (nil: directly).
func newReplicas(t *testing.T, n int, clk *limitertest.Clock, first *redistest.Proxy) []replica {
	t.Helper()
	prefix := fmt.Sprintf("mwsettle-%s-%d:", t.Name(), time.Now().UnixNano())
	var rs []replica
	for i := range n {
		c := redistest.Shared(t)
		if i == 0 && first != nil {
			c = redistest.Client(t, first.Addr())
		}
		s, err := redisstore.New(c, redisstore.WithPrefix(prefix), redisstore.WithTimeout(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		mk := func(p *limiter.Policy) *limiter.Limiter {
			l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = l.Close() })
			return l
		}
		r := replica{
			requests: mk(limiter.MustPolicy("api", limiter.PerMinute(60))),
			tokens:   mk(limiter.MustPolicy("tokens", limiter.PerMinute(1000)).MustUnit("acme-tokens")),
			bytes:    mk(limiter.MustPolicy("download", limiter.PerMinute(1<<20)).MustUnit(limiter.UnitContentBytes)),
		}
		r.h = newMiddleware(t, r.requests, middleware.WithReported(r.tokens, nil, nil), middleware.WithBytes(r.bytes, nil))(reporting)
		rs = append(rs, r)
	}
	return rs
}

// Across three replicas on one Redis: a request reserved at 1 and settled
// at 500 leaves a count of 500 that every replica reads; a settle past
// the limit refuses the key on every replica until the window ends, then
// admits it; a refused request charges no request anywhere; a response
// of N bytes charges N.
func TestSettleAcrossThreeReplicas(t *testing.T) {
	clk := limitertest.New(t0.Add(20 * time.Second))
	rs := newReplicas(t, 3, clk, nil)
	if w := getFrom(rs[0].h, "/chat?tokens=500"); w.Code != http.StatusOK {
		t.Fatalf("replica 1: %d %s", w.Code, w.Body)
	}
	for i, r := range rs {
		if got := usedOf(t, r.tokens, "192.0.2.1"); got[0] != 500 {
			t.Fatalf("replica %d reads %v tokens, want 500", i+1, got)
		}
	}
	if w := getFrom(rs[1].h, "/chat?tokens=800"); w.Code != http.StatusOK {
		t.Fatalf("replica 2: %d", w.Code)
	}
	for i, r := range rs {
		w := getFrom(r.h, "/chat?tokens=1")
		if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "40" {
			t.Fatalf("replica %d in debt: %d Retry-After %q, want 429 and 40", i+1, w.Code, w.Header().Get("Retry-After"))
		}
	}
	if got := usedOf(t, rs[2].requests, "192.0.2.1"); got[0] != 2 {
		t.Fatalf("requests %v, want 2: the refusals charged none", got)
	}
	// "answer" is 6 bytes: each admitted response charged 6.
	if got := usedOf(t, rs[0].bytes, "192.0.2.1"); got[0] != 12 {
		t.Fatalf("bytes %v, want 12", got)
	}
	clk.Set(t0.Add(time.Minute))
	if w := getFrom(rs[2].h, "/chat?tokens=7"); w.Code != http.StatusOK {
		t.Fatalf("the next minute: %d", w.Code)
	}
	if got := usedOf(t, rs[0].tokens, "192.0.2.1"); got[0] != 7 {
		t.Fatalf("the next minute: %v tokens, want 7", got)
	}
}

// A settle whose reply is lost between Redis and the replica (a fault
// proxy drops it) is sent again and counted once.
func TestSettleReplyLostCountedOnce(t *testing.T) {
	proxy := redistest.StartProxy(t, redistest.SharedAddr)
	clk := limitertest.New(t0)
	rs := newReplicas(t, 2, clk, proxy)
	observe, settled := settledOnce()
	h := newMiddleware(t, rs[0].requests, middleware.WithReported(rs[0].tokens, nil, nil), middleware.WithObserver(observe))(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		proxy.DropReplies(1) // the next reply: the settle's
		middleware.Report(r.Context(), "acme-tokens", 500)
	}))
	if w := getFrom(h, "/"); w.Code != http.StatusOK {
		t.Fatalf("%d", w.Code)
	}
	if e := <-settled; e.Err != nil || e.Cost != 500 || proxy.DropsLeft() != 0 {
		t.Fatalf("settle %+v with %d replies still to drop: want it applied, its reply dropped", e, proxy.DropsLeft())
	}
	if got := usedOf(t, rs[1].tokens, "192.0.2.1"); got[0] != 500 {
		t.Fatalf("tokens %v, want 500: the settle applied once", got)
	}
}

// A streamed response of N bytes through one replica charges N, which
// another reads.
func TestStreamedBytesOnRedis(t *testing.T) {
	clk := limitertest.New(t0)
	rs := newReplicas(t, 2, clk, nil)
	body := strings.Repeat("x", 100_000)
	h := newMiddleware(t, rs[0].requests, middleware.WithBytes(rs[0].bytes, nil))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i < len(body); i += 10_000 {
			_, _ = io.WriteString(w, body[i:i+10_000])
			http.NewResponseController(w).Flush()
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	srv.Close() // every handler has returned, and settled
	host, _, _ := net.SplitHostPort(srv.Listener.Addr().String())
	if got := usedOf(t, rs[1].bytes, host); got[0] != 100_000 {
		t.Fatalf("bytes %v, want 100000", got)
	}
}
