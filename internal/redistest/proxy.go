package redistest

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A Proxy forwards loopback TCP connections to a target, holding each chunk
// of the server's replies for a settable delay (a slow Redis, seen from the
// client) or dropping replies (a connection reset after the server ran the
// command).
type Proxy struct {
	l      net.Listener
	target string
	delay  atomic.Int64
	drops  atomic.Int64 // replies still to drop
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  []net.Conn
	closed bool
}

// StartProxy listens on a free loopback port and forwards to target. It
// stops, closing every connection, when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{l: l, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr returns the proxy's address.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// SetDelay sets how long each reply is held before it is passed on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// DropReplies makes the proxy discard the next n replies from the server,
// closing each connection that carried one: the server has run the
// command, the client sees its connection reset, as when a proxy or a
// network path fails between the two.
func (p *Proxy) DropReplies(n int) { p.drops.Store(int64(n)) }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, s) {
			return
		}
		p.wg.Add(2)
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, cs...)
	return true
}

// pipe copies from src to dst; replies (delayed true) wait for the delay.
func (p *Proxy) pipe(dst, src net.Conn, delayed bool) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && delayed {
			for left := p.drops.Load(); left > 0; left = p.drops.Load() {
				if p.drops.CompareAndSwap(left, left-1) {
					return
				}
			}
		}
		if n > 0 {
			if d := time.Duration(p.delay.Load()); delayed && d > 0 {
				time.Sleep(d)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	conns := p.conns
	p.mu.Unlock()
	p.l.Close()
	for _, c := range conns {
		c.Close()
	}
	p.wg.Wait()
}
