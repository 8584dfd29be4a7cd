package redistest

import (
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// A Proxy forwards loopback TCP connections to a target, holding each chunk
// of the server's replies for a settable delay (a slow Redis, seen from the
// client) or dropping replies (a connection reset after the server ran the
// command).
type Proxy struct {
	*relay
	delay atomic.Int64
	drops atomic.Int64 // replies still to drop
}

// StartProxy listens on a free loopback port and forwards to target. It
// stops, closing every connection, when the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p := &Proxy{}
	p.relay = startRelay(t, target, func(c, s net.Conn) (func(), func()) {
		return func() { p.pipe(s, c, false) }, func() { p.pipe(c, s, true) }
	})
	return p
}

// SetDelay sets how long each reply is held before it is passed on.
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// DropReplies makes the proxy discard the next n replies from the server,
// closing each connection that carried one: the server has run the
// command, the client sees its connection reset, as when a proxy or a
// network path fails between the two.
func (p *Proxy) DropReplies(n int) { p.drops.Store(int64(n)) }

// DropsLeft returns how many replies the proxy is still to drop: 0 once
// DropReplies' have been dropped.
func (p *Proxy) DropsLeft() int64 { return p.drops.Load() }

// pipe copies from src to dst; replies (delayed true) wait for the delay.
func (p *Proxy) pipe(dst, src net.Conn, delayed bool) {
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
