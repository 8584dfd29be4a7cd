// Package captest drives HTTP handlers behind an in-flight cap with many
// concurrent clients and counts how many ran at once, for the tests of
// the middleware (the memory store) and of the Redis store (replicas
// sharing one Redis, a Cluster): one gate and one hammer, so that every
// store is held to the same run.
//
//	g := captest.NewGate(5)
//	srv := httptest.NewServer(mw(g))
//	counts := captest.Hammer(t, g, []string{srv.URL}, 64, 20)
//	if g.Peak() != 5 { ... }
package captest

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Gate is the handler behind the cap: it counts the requests running
// in it (across every server it is mounted on) and keeps the peak. The
// first requests to get in wait until max are in at once and Hammer has
// seen a refusal, so that a cap is seen both to reach max and to refuse
// beyond it; from then on requests pass straight through. A request
// still waiting after 10 s gives up and answers 504, which fails the
// run: the cap never let max in, or never refused.
type Gate struct {
	max           int64
	running, peak atomic.Int64
	mu            sync.Mutex
	reached       bool // max were in at once
	refused       bool // Hammer saw a 429
	full          chan struct{}
}

// NewGate returns a gate that opens once max requests are in it.
func NewGate(max int64) *Gate { return &Gate{max: max, full: make(chan struct{})} }

// gateWait bounds a request's wait for the gate to open.
const gateWait = 10 * time.Second

// ServeHTTP holds the request until max are in, then answers 200.
func (g *Gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := g.running.Add(1)
	defer g.running.Add(-1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	if n >= g.max {
		g.note(true, false)
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case <-g.full:
		w.WriteHeader(http.StatusOK)
	case <-r.Context().Done():
	case <-t.C:
		w.WriteHeader(http.StatusGatewayTimeout)
	}
}

// note records that max were in (reached) or that a request was refused,
// and opens the gate once both have happened.
func (g *Gate) note(reached, refused bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	was := g.reached && g.refused
	g.reached, g.refused = g.reached || reached, g.refused || refused
	if !was && g.reached && g.refused {
		close(g.full)
	}
}

// Peak returns the most requests that were in the gate at once.
func (g *Gate) Peak() int64 { return g.peak.Load() }

// Running returns how many requests are in the gate now.
func (g *Gate) Running() int64 { return g.running.Load() }

// Hammer sends rounds GET requests from each of clients goroutines,
// started together, to urls in turn (client i's j'th request goes to
// urls[(i+j) % len(urls)]), tells g of each refusal (429), and returns
// how many got each status. A transport error fails the test.
func Hammer(t testing.TB, g *Gate, urls []string, clients, rounds int) map[int]int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	start := make(chan struct{})
	for i := range clients {
		wg.Go(func() {
			<-start
			for j := range rounds {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, urls[(i+j)%len(urls)], nil)
				if err != nil {
					t.Error(err)
					return
				}
				res, err := c.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode == http.StatusTooManyRequests {
					g.note(false, true)
				}
				mu.Lock()
				counts[res.StatusCode]++
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	return counts
}

// Check fails the test unless g's peak is exactly max and every answer
// in counts was 200 or 429, some of each.
func Check(t testing.TB, g *Gate, max int64, counts map[int]int) {
	t.Helper()
	if p := g.Peak(); p != max {
		t.Errorf("peak of %d handlers at once, want exactly %d", p, max)
	}
	for status, n := range counts {
		if status != http.StatusOK && status != http.StatusTooManyRequests {
			t.Errorf("%d answers of status %d, want 200 or 429 only (all: %v)", n, status, counts)
		}
	}
	if counts[http.StatusOK] == 0 || counts[http.StatusTooManyRequests] == 0 {
		t.Errorf("answers %v, want some 200 and some 429", counts)
	}
}
