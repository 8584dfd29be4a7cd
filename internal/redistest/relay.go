package redistest

import (
	"net"
	"sync"
	"testing"
)

// A relay is what the proxies share: a loopback listener that dials the
// target for each connection it accepts, and runs the two loops the
// proxy makes for the pair, client to server and back.
type relay struct {
	l      net.Listener
	target string
	serve  func(c, s net.Conn) (up, down func())
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// startRelay listens on a free loopback port and relays to target with
// the loops serve makes, each of which closes both connections when it
// ends. It stops, closing every connection, when the test ends.
func startRelay(t testing.TB, target string, serve func(c, s net.Conn) (up, down func())) *relay {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	r := &relay{l: l, target: target, serve: serve}
	r.wg.Add(1)
	go r.accept()
	t.Cleanup(r.Close)
	return r
}

// Addr returns the proxy's address.
func (r *relay) Addr() string { return r.l.Addr().String() }

func (r *relay) accept() {
	defer r.wg.Done()
	for {
		c, err := r.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", r.target)
		if err != nil {
			c.Close()
			continue
		}
		if !r.track(c, s) {
			return
		}
		up, down := r.serve(c, s)
		r.wg.Add(2)
		go func() {
			defer r.wg.Done()
			up()
		}()
		go func() {
			defer r.wg.Done()
			down()
		}()
	}
}

func (r *relay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	r.conns = append(r.conns, cs...)
	return true
}

// Close stops the proxy and waits for its goroutines.
func (r *relay) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	conns := r.conns
	r.mu.Unlock()
	r.l.Close()
	for _, c := range conns {
		c.Close()
	}
	r.wg.Wait()
}
