package linearize

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
)

// Lost replies at random land on decisions mostly, which are nine calls
// in ten; aimed losses drop the replies to refunds, settles and Resets.
// Beside the run's faults, a seeded gap of 60 to 180 ms apart, the loss
// of the replies to the next one to three calls of one kind is armed,
// the kinds in turn (run.aimAt): the worker about to make such a call
// has its replica's proxies drop the next reply (aim). Each is recorded
// as a fault from its arming until the calls it aimed at returned, or
// aimSpan passed.
const aimSpan = 200 * time.Millisecond

// aimAt has aimed losses drop replies at the replicas' own proxies
// (proxies[i], replica i's: the one to its server, or one to each node),
// aimed at calls of kinds in turn.
func (r *run) aimAt(proxies [][]*redistest.Proxy, kinds ...Kind) {
	for i, rp := range r.reps {
		rp.proxies = proxies[i]
	}
	r.aimKinds = kinds
	r.aimed = map[Kind]*atomic.Int64{}
	for _, k := range kinds {
		r.aimed[k] = &atomic.Int64{}
	}
}

// aimLosses arms aimed losses until done.
func (r *run) aimLosses(done <-chan struct{}) {
	if len(r.aimKinds) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(r.seed, 1<<42))
	for i := 0; gap(rng, done); i++ {
		n := 1 + rng.IntN(3)
		k := r.aimKinds[i%len(r.aimKinds)]
		start := r.rec.now()
		r.armedKind.Store(&k)
		r.inFlight.Add(1) // the arming's own, so that none of the calls' ends the span early
		r.armed.Store(int64(n))
		tick := time.NewTicker(time.Millisecond)
		deadline := time.Now().Add(aimSpan)
		for r.armed.Load() > 0 && time.Now().Before(deadline) && !r.stop.Load() {
			<-tick.C
		}
		r.armed.Store(0)
		r.inFlight.Add(-1)
		for r.inFlight.Load() > 0 && time.Now().Before(deadline) {
			<-tick.C
		}
		tick.Stop()
		r.rec.fault(Fault{Kind: "aimed-losses", Start: start, End: r.rec.now(),
			Detail: fmt.Sprintf("the replies to the next %d %ss", n, k)})
	}
}

// aim makes the worker's replica's proxies drop the next reply when a
// loss is armed for calls of kind k, and returns what to call once the
// call returned: the drop is withdrawn if another took it (the
// replica's other worker may have had a reply on the way, or, on a
// Cluster, a node other than the key's).
func (w *worker) aim(k Kind) (done func()) {
	r, ps := w.run, w.rp.proxies
	if len(ps) == 0 || r.armed.Load() <= 0 || *r.armedKind.Load() != k {
		return func() {}
	}
	r.inFlight.Add(1)
	if r.armed.Add(-1) < 0 {
		r.inFlight.Add(-1)
		return func() {}
	}
	r.aimed[k].Add(1)
	for _, p := range ps {
		p.DropReplies(1)
	}
	return func() {
		for _, p := range ps {
			p.DropReplies(0)
		}
		r.inFlight.Add(-1)
	}
}
