package middleware_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
)

// newBytesLimiter returns a limiter of content-bytes a minute, on its
// own store.
func newBytesLimiter(t *testing.T, clk limiter.Clock, perMinute int64) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(limiter.MustPolicy("download", limiter.PerMinute(perMinute)).MustUnit(limiter.UnitContentBytes), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// settledOnce is an observer that signals each Settled event.
func settledOnce() (func(middleware.Event), <-chan middleware.Event) {
	ch := make(chan middleware.Event, 8)
	return func(e middleware.Event) {
		if e.Outcome == middleware.Settled {
			e.Request = nil
			ch <- e
		}
	}, ch
}

// A streamed response of N bytes charges N under a content-bytes policy,
// however it was written: in flushed chunks, through io.Copy (the
// server's ReadFrom), or both.
func TestStreamedBytesCharged(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(600))
	down := newBytesLimiter(t, clk, 10<<20)
	observe, settled := settledOnce()
	const chunk, chunks = 4096, 25
	h := newMiddleware(t, requests, middleware.WithBytes(down, nil), middleware.WithObserver(observe))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/stream":
			for range chunks {
				_, _ = w.Write(bytes.Repeat([]byte("x"), chunk))
				http.NewResponseController(w).Flush()
			}
		case "/copy":
			_, _ = io.Copy(w, io.LimitReader(strings.NewReader(strings.Repeat("y", 70_000)), 70_000)) // no WriterTo: the server's ReadFrom
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, tt := range []struct {
		path string
		want int64
	}{{"/stream", chunk * chunks}, {"/copy", 70_000}} {
		resp, err := srv.Client().Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != tt.want {
			t.Fatalf("%s: the client read %d bytes, want %d", tt.path, n, tt.want)
		}
		if e := <-settled; e.Cost != tt.want {
			t.Fatalf("%s: settled at %d, want %d", tt.path, e.Cost, tt.want)
		}
	}
	if got := usedOf(t, down, "127.0.0.1"); got[0] != chunk*chunks+70_000 {
		t.Fatalf("bytes used %v, want %d", got, chunk*chunks+70_000)
	}
}

// A client that leaves mid-stream is charged for what was sent: the
// bytes the server took from the handler before the connection failed,
// not the whole body the handler meant to send.
func TestClientLeavingMidStreamChargedForWhatWasSent(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(600))
	down := newBytesLimiter(t, clk, 1<<30)
	observe, settled := settledOnce()
	const whole = 64 << 20
	var sent atomic.Int64
	h := newMiddleware(t, requests, middleware.WithBytes(down, nil), middleware.WithObserver(observe))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		buf := bytes.Repeat([]byte("z"), 16<<10)
		for sent.Load() < whole {
			n, err := w.Write(buf)
			sent.Add(int64(n))
			if err != nil {
				return
			}
			if err := http.NewResponseController(w).Flush(); err != nil {
				return
			}
			if r.Context().Err() != nil {
				return
			}
		}
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 256<<10); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // the client leaves
	var e middleware.Event
	select {
	case e = <-settled:
	case <-time.After(30 * time.Second):
		t.Fatal("no settle 30 s after the client left")
	}
	if e.Cost != sent.Load() || e.Cost < 256<<10 || e.Cost >= whole {
		t.Fatalf("settled at %d, handler's writes took %d: want them equal, at least what the client read and less than the whole body", e.Cost, sent.Load())
	}
	if got := usedOf(t, down, "127.0.0.1"); got[0] != e.Cost {
		t.Fatalf("bytes used %v, want %d", got, e.Cost)
	}
}

// A HEAD request is charged no bytes: net/http sends no content for it,
// whatever the handler writes; the same GET is charged its body.
func TestHeadChargesNoBytes(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(600))
	down := newBytesLimiter(t, clk, 1<<20)
	h := newMiddleware(t, requests, middleware.WithBytes(down, nil))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("h", 5000))
	}))
	srv := httptest.NewServer(h)
	for _, method := range []string{http.MethodHead, http.MethodGet} {
		req, _ := http.NewRequest(method, srv.URL, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	srv.Close() // every handler has returned, and settled
	if got := usedOf(t, down, "127.0.0.1"); got[0] != 5000 {
		t.Fatalf("bytes %v, want 5000: the GET's alone", got)
	}
}

// A handler that hijacks the connection (a WebSocket upgrade, say) is
// settled once it returns, at the bytes it wrote through the
// ResponseWriter: what it writes on the connection is its own, not
// counted.
func TestHijackedConnectionNotCounted(t *testing.T) {
	clk := newFakeClock(t0)
	requests := newLimiter(t, clk, "api", limiter.PerMinute(600))
	down := newBytesLimiter(t, clk, 1<<20)
	observe, settled := settledOnce()
	h := newMiddleware(t, requests, middleware.WithBytes(down, nil), middleware.WithObserver(observe))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		_, _ = buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nmine")
		_ = buf.Flush()
	}))
	srv := httptest.NewServer(h)
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	srv.Close()
	if string(body) != "mine" {
		t.Fatalf("body %q", body)
	}
	if e := <-settled; e.Cost != 0 || e.Err != nil {
		t.Fatalf("settled %+v, want at 0", e)
	}
	if got := usedOf(t, down, "127.0.0.1"); got[0] != 0 {
		t.Fatalf("bytes %v, want 0: what went on the hijacked connection is not counted", got)
	}
}
