package redisstore

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// batcher shares round trips between concurrent decisions, on every kind
// of client. A decision that finds fewer than inFlight rounds running
// starts one; the others queue, and each running round, when its replies
// are in, takes up to size queued decisions into the next. Under light
// load a decision goes out at once, alone; under heavy load rounds carry
// many decisions, which cuts both the client's and the server's cost per
// decision. While a whole round's worth (size) is queued, rounds start up
// to twice inFlight: work enough to fill them is waiting, and a slow link
// carries more decisions per round trip that way. The Plain path is the
// same loop with rounds of one.
//
// More rounds start when queueing would outlast the timeout, from the
// measured round trip: a decision that would wait for the running rounds'
// replies and then for its own longer than the timeout allows starts a
// round that lingers a moment, to gather the rest of the burst, before it
// is sent; as many such rounds as the burst needs, up to maxInFlight, what
// the pools hold. So a burst on a slow link is decided, not timed out,
// while a fast Redis keeps the few large rounds that use it best.
//
// On a single node the batcher also counts the connections the client's
// pool holds open (conns): a round that would have to dial one first
// waits a dial's round trips, three on go-redis, on a link that may have
// just slowed down without the estimate having seen it. So a round that
// would take the last open connection while another round is out
// gathers the queue first (it lingers until a round answers, the link as
// fast as measured, until the queue stops growing, or for lingerFor);
// while it gathers, no round starts that would dial; and a round that
// leaves no open connection for another takes the whole queue, up to
// maxBatchSize, rather than a round's size.
// A burst on a cold pool is carried by the connections open.
type batcher struct {
	s      *Store
	script script // what the rounds send: decisions, or slots
	router router
	mu     sync.Mutex
	queue  []*call
	// running counts the rounds in flight, lingering those of them not
	// yet sent; closed refuses new calls and guards wg.Add against
	// close's wait.
	running, lingering, size, inFlight, maxInFlight int
	closed                                          bool
	rtt                                             atomic.Int64 // moving average of a round's time, ns
	wg                                              sync.WaitGroup
	// conns returns the connections the pool holds open; nil where the
	// store cannot count them (Cluster, Ring, the Plain path).
	conns func() int
	// gathering, when set, is closed by the next round to answer after
	// it was set, which ends the gathering of rounds waiting on it.
	gathering atomic.Pointer[gathering]
}

// A gathering is what rounds gathering a burst wait on: a round's
// answer after since.
type gathering struct {
	since    time.Time
	answered chan struct{}
}

// A call is one decision waiting in the batcher.
type call struct {
	ctx      context.Context
	deadline time.Time // the store's timeout, from the decision's arrival
	req      limiter.Request
	want     int64    // the lease asked for
	slot     slotOp   // an in-flight slot's call (inflight.lua); zero for a decision
	settle   settleOp // a settle's call (settle.lua); zero for a decision
	res      result
	err      error
	done     chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newBatcher(s *Store, sc script, r router, size, inFlight, pool int) *batcher {
	return &batcher{s: s, script: sc, router: r, size: size,
		inFlight: min(inFlight, pool), maxInFlight: pool}
}

// maxRoundsUnknownPool bounds the rounds in flight on a client whose pool
// the store cannot read.
const maxRoundsUnknownPool = 64

// do queues one decision, due by deadline, and waits for its result or
// for ctx to end.
//
// The deadline needs no context (and no timer) per decision: calls leave
// the queue in arrival order, so the rounds running ahead of a call end
// by the deadline of their oldest call, which is no later than this
// one's; a call with less than a quarter of the timeout left when its turn
// comes is dropped as timed out, and a round's own deadline is that of
// its oldest call.
//
// A call that waited elsewhere first (waited: for another caller's lease
// request) comes with less of its timeout left than the calls already in
// flight, whose rounds may end after its deadline: it is refused at once
// with less than a quarter of the timeout left, and otherwise waits on a
// timer of its own.
func (b *batcher) do(ctx context.Context, req *limiter.Request, want int64, deadline time.Time, waited bool) (result, error) {
	var expired <-chan time.Time
	if waited {
		left := time.Until(deadline)
		if left < b.s.cfg.timeout/4 {
			return result{}, context.DeadlineExceeded
		}
		t := time.NewTimer(left)
		defer t.Stop()
		expired = t.C
	}
	c := callPool.Get().(*call)
	c.ctx, c.req, c.want, c.slot, c.settle, c.err, c.deadline = ctx, *req, want, slotOp{}, settleOp{}, nil, deadline
	return b.submit(ctx, c, expired)
}

// doSlot queues one slot call of op for key under the cap p, due by
// deadline, and waits for its result or for ctx to end, as do does.
func (b *batcher) doSlot(ctx context.Context, key string, p *limiter.Policy, op slotOp, deadline time.Time) (result, error) {
	c := callPool.Get().(*call)
	c.ctx, c.req, c.want, c.slot, c.settle, c.err, c.deadline = ctx, limiter.Request{Key: key, Policy: p}, 0, op, settleOp{}, nil, deadline
	return b.submit(ctx, c, nil)
}

// doSettle queues one settle of req, op, due by deadline, and waits for
// its result or for ctx to end, as do does.
func (b *batcher) doSettle(ctx context.Context, req *limiter.Request, op settleOp, deadline time.Time) (result, error) {
	c := callPool.Get().(*call)
	c.ctx, c.req, c.want, c.slot, c.settle, c.err, c.deadline = ctx, *req, 0, slotOp{}, op, nil, deadline
	return b.submit(ctx, c, nil)
}

// submit queues c, from the pool, and waits for its result, for ctx to
// end or for expired.
func (b *batcher) submit(ctx context.Context, c *call, expired <-chan time.Time) (result, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		callPool.Put(c)
		return result{}, limiter.ErrClosed
	}
	b.queue = append(b.queue, c)
	start := b.running < b.inFlight ||
		b.running < min(2*b.inFlight, b.maxInFlight) && len(b.queue) >= b.size
	linger := !start && b.running < b.maxInFlight && b.late(len(b.queue))
	gather := false
	if (start || linger) && b.running > 0 && b.conns != nil {
		switch free := b.conns() - b.running; {
		case free <= 0 && b.lingering > 0 && !linger && !b.late(len(b.queue)):
			// It would dial, while a round gathering on an open
			// connection will take the queue in time. (A call late
			// even so gets its round: a dial is its only chance.)
			start, linger = false, false
		case free == 1 && start && len(b.queue) < b.size && b.running > b.lingering:
			// The last open connection, while a round is out whose
			// answer ends the gathering: gather the queue on it.
			start, linger, gather = false, true, true
		}
	}
	if start || linger {
		b.running++
		b.wg.Add(1)
	}
	if linger {
		b.lingering++
	}
	b.mu.Unlock()
	if start || linger {
		go b.loop(linger, gather)
	}
	select {
	case <-c.done:
		r, err := c.res, c.err
		c.ctx, c.req, c.slot, c.settle = nil, limiter.Request{}, slotOp{}, settleOp{}
		callPool.Put(c)
		return r, err
	case <-ctx.Done():
		// The call may still be sent (it is then charged, as any request
		// whose answer was lost) or dropped; it is not reused either way.
		return result{}, ctx.Err()
	case <-expired: // likewise
		return result{}, context.DeadlineExceeded
	}
}

// doAll queues calls, made by the caller with their done channels, and
// waits for every one to be answered: the background work of the
// in-flight slots (renewals, releases of slots whose holder is gone),
// whose deadlines the rounds honour, so that no wait is needed of its
// own. Rounds start as for calls queued one by one.
func (b *batcher) doAll(calls []*call) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		for _, c := range calls {
			c.err = limiter.ErrClosed
		}
		return
	}
	b.queue = append(b.queue, calls...)
	most := b.inFlight
	if len(b.queue) >= b.size {
		most = min(2*b.inFlight, b.maxInFlight)
	}
	starts := max(0, min((len(b.queue)+b.size-1)/b.size, most-b.running))
	b.running += starts
	b.wg.Add(starts)
	b.mu.Unlock()
	for range starts {
		go b.loop(false, false)
	}
	for _, c := range calls {
		<-c.done
	}
}

// spare returns how many connections the pool holds open beside those
// the running rounds hold (at most 0: another round would have to dial).
// Called with b.mu held.
func (b *batcher) spare() int {
	if b.conns == nil {
		return b.maxInFlight
	}
	return b.conns() - b.running
}

// late reports whether the q'th queued call would be answered after the
// timeout: the lingering rounds take the first size calls each; the rest
// wait for a running round's reply (in the worst case each has just been
// sent), one round trip per size calls per round queued ahead of them,
// and then need one more, all within three quarters of the timeout (the
// rest is the margin for a round trip slower than the average); and a
// call must be taken with a quarter of the timeout left. Called with b.mu
// held.
func (b *batcher) late(q int) bool {
	rtt := time.Duration(b.rtt.Load())
	q -= b.lingering * b.size
	if b.lingering > 0 && b.spare() <= 0 {
		q -= b.lingering * (maxBatchSize - b.size) // they take the whole queue
	}
	if rtt == 0 || q <= 0 {
		return false
	}
	busy := b.running - b.lingering
	if busy <= 0 {
		return true
	}
	taken := time.Duration((q-1)/(busy*b.size)+1) * rtt
	t := b.s.cfg.timeout
	return taken+rtt > t-t/4 || taken > t-t/4
}

// lingerFor returns how long a round started for a burst waits before it
// is sent: half of what the timeout leaves beside a round trip, at most a
// quarter of the timeout.
func (b *batcher) lingerFor() time.Duration {
	t := b.s.cfg.timeout
	return min(t/4, max(0, (t-time.Duration(b.rtt.Load()))/2))
}

// wait lingers for lingerFor, or (gather) until a round answers if one
// does sooner.
//
// A gathering round also stops once the queue has stopped growing for an
// eighth of that time: the burst has arrived, and every moment more is
// taken from the round trip its decisions still need.
func (b *batcher) wait(gather bool) {
	d := b.lingerFor()
	t := time.NewTimer(d)
	defer t.Stop()
	if !gather {
		<-t.C
		return
	}
	// Join the gathering under way, unless it began longer ago than a
	// linger lasts: then the round that set it got no answer (a round
	// that answers clears it), and an answer since would end this one at
	// once, though it came before this one began.
	var answered chan struct{}
	for answered == nil {
		g := b.gathering.Load()
		if g != nil && time.Since(g.since) <= d {
			answered = g.answered
		} else if ng := (&gathering{time.Now(), make(chan struct{})}); b.gathering.CompareAndSwap(g, ng) {
			answered = ng.answered
		}
	}
	tick := time.NewTicker(max(d/8, time.Millisecond))
	defer tick.Stop()
	last := b.queued()
	for {
		select {
		case <-t.C:
			return
		case <-answered:
			return
		case <-tick.C:
			q := b.queued()
			if q <= last {
				return
			}
			last = q
		}
	}
}

// queued returns how many calls are queued.
func (b *batcher) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// observe adds a round that took d to the moving average of a round's
// time (7/8 the old, 1/8 the new).
func (b *batcher) observe(d time.Duration) {
	old := b.rtt.Load()
	if old == 0 {
		b.rtt.Store(int64(d))
		return
	}
	b.rtt.Store(old - old/8 + int64(d)/8)
}

// loop sends rounds until the queue is empty, the first after lingering
// (linger) to gather a burst; a round gathering on the last open
// connection (gather) lingers no longer than until a round answers.
func (b *batcher) loop(linger, gather bool) {
	defer b.wg.Done()
	var (
		batch []*call
		buf   roundBuf
	)
	if linger {
		b.wait(gather)
	}
	for {
		b.mu.Lock()
		if linger {
			b.lingering--
			linger = false
		}
		n := min(len(b.queue), b.size)
		if n < len(b.queue) && b.spare() <= 0 {
			// No open connection for another round: take the queue.
			n = min(len(b.queue), maxBatchSize)
		}
		if n == 0 {
			b.running--
			b.mu.Unlock()
			return
		}
		batch = append(batch[:0], b.queue[:n]...)
		rest := copy(b.queue, b.queue[n:])
		clear(b.queue[rest:])
		b.queue = b.queue[:rest]
		b.mu.Unlock()
		b.send(batch, &buf)
		// The callers just answered are runnable, most of them on this
		// P; under load they ask again at once. Let them queue before
		// the next round is taken: else it leaves with the few queued
		// meanwhile, the rest wait a whole round trip for the one after,
		// and the rounds in flight fall out of balance (one large, one
		// nearly empty), which leaves the client and Redis waiting on
		// each other in turn. Under light load there is no one to run.
		runtime.Gosched()
	}
}

// send runs one round and hands each call its result. A call with less
// than a quarter of the timeout left is dropped as timed out rather than
// sent: the round runs to the deadline of its oldest call, and one nearly
// spent call must not cut short the fresh ones queued behind it.
func (b *batcher) send(batch []*call, buf *roundBuf) {
	live := batch[:0]
	now := time.Now()
	cutoff := now.Add(b.s.cfg.timeout / 4)
	var deadline time.Time
	for _, c := range batch {
		err := c.ctx.Err()
		if err == nil && c.deadline.Before(cutoff) {
			err = context.DeadlineExceeded
		}
		if err != nil {
			c.err = err
			c.done <- struct{}{}
			continue
		}
		if deadline.IsZero() || c.deadline.Before(deadline) {
			deadline = c.deadline
		}
		live = append(live, c)
	}
	if len(live) == 0 {
		return
	}
	if took, at := b.round(live, deadline, buf); took > 0 {
		b.observe(took)
		// A round whose answer came before the gathering began (its
		// loop since delayed) says nothing of the link now.
		if g := b.gathering.Load(); g != nil && at.After(g.since) && b.gathering.CompareAndSwap(g, nil) {
			close(g.answered)
		}
	}
}

// close refuses new calls and waits until no round is running.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
