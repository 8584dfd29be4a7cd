package linearize

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// aimedLosses arms the loss of the replies to the next one to three
// calls of one kind r aims at (run.aimAt: refunds, settles, Resets, each
// in turn), for 200 ms: the worker about to make one has its replica's
// proxy drop the next reply (aim). Lost replies at random land on
// decisions mostly, which are nine calls in ten.
var aimedLosses = faultKind{"aimed-losses", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
	n := 1 + rng.IntN(3)
	k := r.aimAt[r.aims%len(r.aimAt)]
	r.aims++
	r.armedKind.Store(&k)
	r.armed.Store(int64(n))
	return fmt.Sprintf("the replies to the next %d %ss", n, k), 200 * time.Millisecond,
		func() { r.armed.Store(0) }
}}

// aim makes the worker's replica's proxy drop the next reply when a
// loss is armed for calls of kind k, and returns what to call once the
// call returned: the drop is withdrawn if another took it (the
// replica's other worker may have had a reply on the way).
func (w *worker) aim(k Kind) (done func()) {
	r, p := w.run, w.rp.proxy
	if p == nil || r.armed.Load() <= 0 || *r.armedKind.Load() != k || r.armed.Add(-1) < 0 {
		return func() {}
	}
	r.aimed[k].Add(1)
	p.DropReplies(1)
	return func() { p.DropReplies(0) }
}

// perReplica returns a client factory that reaches addr through a proxy
// of its own for each client it makes (each replica), and the proxies.
func perReplica(t testing.TB, addr string, n int) (func() redis.UniversalClient, []*redistest.Proxy) {
	var ps []*redistest.Proxy
	for range n {
		ps = append(ps, redistest.StartProxy(t, addr))
	}
	i := 0
	return func() redis.UniversalClient {
		p := ps[i%len(ps)]
		i++
		return single(p.Addr(), nil)()
	}, ps
}
