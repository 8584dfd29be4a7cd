package redisstore

import (
	"context"
	"sync"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// batcher shares round trips between concurrent decisions. A decision that
// finds fewer than inFlight script calls running starts one; the others
// queue, and each running call, when its reply is in, takes up to size
// queued decisions into its next call. Under light load a decision goes
// out at once, alone; under heavy load calls carry many decisions, which
// cuts both the client's and the server's cost per decision. The script
// decides the requests of one call in arrival order, each atomically.
type batcher struct {
	s       *Store
	client  *redis.Client        // a single node; nil on a Cluster
	cluster *redis.ClusterClient // Batch per node (clusterbatch.go)
	ring    *redis.Ring          // Batch per shard (clusterbatch.go)
	// nodeCalls: the Cluster batcher sends node calls (clusterbatch.go).
	nodeCalls bool
	mu        sync.Mutex
	queue     []*call
	running   int
	closed    bool // no new call once set; guards wg.Add against wait
	size      int
	inFlight  int
	wg        sync.WaitGroup
}

// A call is one decision waiting in the batcher.
type call struct {
	ctx      context.Context
	deadline time.Time // the store's timeout, from the call's arrival
	req      limiter.Request
	want     int64 // the lease asked for
	res      result
	err      error
	done     chan struct{}
}

var callPool = sync.Pool{New: func() any { return &call{done: make(chan struct{}, 1)} }}

func newBatcher(s *Store, c *redis.Client) *batcher {
	// No more calls in flight than the pool has connections: a batch
	// waiting for one would spend its deadline queued in the client.
	inFlight := s.cfg.batchInFlight
	if n := c.Options().PoolSize; n > 0 {
		inFlight = min(inFlight, n)
	}
	return &batcher{s: s, client: c, size: s.cfg.batchSize, inFlight: inFlight}
}

// do queues one decision and waits for its result or for ctx to end.
//
// The store's timeout needs no context (and no timer) per decision: calls
// leave the queue in arrival order and all have the same timeout, so the
// batches running ahead of a call end by the deadline of their oldest
// call, which is no later than this one's; a call with less than a
// quarter of the timeout left when its turn comes is dropped as timed out,
// and a batch's own deadline is that of its oldest remaining call.
func (b *batcher) do(ctx context.Context, req *limiter.Request, want int64) (result, error) {
	c := callPool.Get().(*call)
	c.ctx, c.req, c.want, c.err = ctx, *req, want, nil
	c.deadline = time.Now().Add(b.s.cfg.timeout)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		callPool.Put(c)
		return result{}, limiter.ErrClosed
	}
	b.queue = append(b.queue, c)
	start := b.running < b.inFlight
	if start {
		b.running++
		b.wg.Add(1)
	}
	b.mu.Unlock()
	if start {
		go b.loop()
	}
	select {
	case <-c.done:
		r, err := c.res, c.err
		c.ctx, c.req = nil, limiter.Request{}
		callPool.Put(c)
		return r, err
	case <-ctx.Done():
		// The call may still be sent (it is then charged, as any request
		// whose answer was lost) or dropped; it is not reused either way.
		return result{}, ctx.Err()
	}
}

// loop sends batches until the queue is empty.
func (b *batcher) loop() {
	defer b.wg.Done()
	var (
		batch []*call
		keys  []string
		args  []any
		res   []result
		nwin  []int
	)
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.size)
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
		keys, args, res, nwin = b.send(batch, keys[:0], args[:0], res[:0], nwin[:0])
	}
}

// send runs one batch and hands each call its result. It returns its
// buffers for reuse.
func (b *batcher) send(batch []*call, keys []string, args []any, res []result, nwin []int) ([]string, []any, []result, []int) {
	s := b.s
	live := batch[:0]
	// A call with less than a quarter of the timeout left is dropped as
	// timed out rather than sent: the batch runs to the deadline of its
	// oldest call, and one nearly spent call must not cut short the
	// fresh ones queued behind it.
	cutoff := time.Now().Add(s.cfg.timeout / 4)
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
		return keys, args, res, nwin
	}
	if b.cluster != nil || b.ring != nil {
		return b.sendSlots(live, deadline, keys, args, res, nwin)
	}
	keys, args, nwin = b.command(live, keys, args, nwin, false)
	res = append(res, make([]result, len(live))...)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	r, err := b.eval(ctx, args)
	cancel()
	b.deliver(live, &r, err, nwin, res)
	clear(args)
	return keys, args, res, nwin
}

// command appends the script call deciding calls, in order, to args (its
// keys to keys, each call's number of windows to nwin). A node call
// (clusterbatch.go) declares no key and passes them in the arguments.
func (b *batcher) command(calls []*call, keys []string, args []any, nwin []int, node bool) ([]string, []any, []int) {
	s := b.s
	first := len(keys)
	for _, c := range calls {
		pk := s.keys.get(c.req.Policy)
		n := c.req.Policy.NumRates()
		keys = appendKeys(keys, s.cfg.prefix, c.req.Key, pk, n, s.cfg.clock, c.req.Now.UnixMilli())
		nwin = append(nwin, n)
	}
	// The command: EVALSHA hash numkeys keys... header... requests...
	// or for a node call EVALSHA hash 0 header... keys... requests...
	if node {
		args = scriptCommand(args, nil)
		h := s.cfg.header(len(calls), len(keys)-first)
		args = append(args, h[:]...)
		for _, k := range keys[first:] {
			args = append(args, k)
		}
	} else {
		args = scriptCommand(args, keys[first:])
		h := s.cfg.header(len(calls), 0)
		args = append(args, h[:]...)
	}
	for _, c := range calls {
		args = appendArgs(args, &c.req, s.keys.get(c.req.Policy), c.want)
	}
	return keys, args, nwin
}

// deliver hands each of calls its result from r, the reply of their
// script call, or err; nwin holds each call's number of windows and res
// room for their results.
func (b *batcher) deliver(calls []*call, r *replyReader, err error, nwin []int, res []result) {
	if err == nil {
		err = parseReply(r, func(i int) int { return nwin[i] }, res, false)
	}
	for i, c := range calls {
		if err == nil {
			c.res = res[i]
		}
		c.err = err
		c.done <- struct{}{}
	}
}

// eval runs one batch's script call through the circuit breaker, its
// reply read raw.
func (b *batcher) eval(ctx context.Context, cmd []any) (replyReader, error) {
	s := b.s
	v, err := s.breaker.Execute(func() (any, error) {
		left := timeLeft(ctx)
		r, err := s.eval(ctx, b.client, cmd, true)
		if err != nil {
			if err = s.queued(left, deadlineErr(ctx, err)); !isQueued(err) {
				s.lastErr.Store(&err)
			}
			return nil, err
		}
		return r, nil
	})
	if err != nil {
		return replyReader{}, err
	}
	return v.(replyReader), nil
}

// close refuses new calls and waits until no batch is running.
func (b *batcher) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}
