package redisstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batch on a Cluster. The batcher gathers concurrent decisions as it does
// on one node; a round then groups its decisions by the master that
// serves their slot (every key of a decision shares the client key's hash
// tag, hence its slot) and makes one script call per master: a node call,
// which declares one key to route it and touches the other slots' keys
// undeclared (take.lua), or a plain call when the decisions share one
// slot. Every call of the round goes out in one Cluster pipeline: go-redis
// splits it into one pipeline per node, follows MOVED and ASK per
// command, and never re-sends a pipeline holding a NoRetry command after
// a network error. A decision that a node call finds off its node (its
// slot moved since go-redis last read the slot map) was charged nothing
// and is sent again in the same round in a call of its own, which follows
// the redirect. What the batcher adds on one node is kept per round: the
// deadline of its oldest decision, one breaker call, the queue's timeout
// accounting.

// newSlotBatcher returns a batcher sending through a Cluster client.
func newSlotBatcher(s *Store, c *redis.ClusterClient) *batcher {
	// A round already runs a call on every node it touches, in parallel:
	// half as many rounds as on one node keep the nodes as busy with
	// larger calls (measured on three masters, 64 callers, decisions/s:
	// 1 round 83k, 2 rounds 88k, 4 rounds 77k). Each round holds one
	// connection per node.
	inFlight := max(1, s.cfg.batchInFlight/2)
	if n := c.Options().PoolSize; n > 0 {
		inFlight = min(inFlight, n)
	}
	return &batcher{s: s, cluster: c, size: s.cfg.batchSize, inFlight: inFlight}
}

// A slotCall is one round's script call: the decisions of one slot, or
// of every slot of one node (a node call).
type slotCall struct {
	calls []*call
	args  []any // the command
	nwin  []int
	res   []result
	node  bool // a node call: a request may come back elsewhere
	read  bool // res holds the reply's results (node calls)
	cmd   scriptCmd
	err   error
}

// sendSlots sends one round, live, due by deadline, and hands each call
// its result. It returns its buffers for reuse.
//
// The round's decisions are grouped by the node that serves their slot,
// as go-redis's cluster state has it, and each node gets one script call
// for all of them (a node call), or a slot call when they share one slot;
// a script's cost is mostly its own start and its reply, so one call per
// node carries a round at a fraction of the server's and the client's
// work per decision of one call per slot (docs/performance.md). A
// request whose slot has moved off the node it was sent to (a migration,
// a failover not yet seen) is charged nothing there (take.lua) and is
// sent again, in the same round, in a slot call of its own, which go-redis
// routes by MOVED and ASK.
func (b *batcher) sendSlots(live []*call, deadline time.Time, keys []string, args []any, res []result, nwin []int) ([]string, []any, []result, []int) {
	s := b.s
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	type placed struct {
		node int // index in nodes; -1: not known
		slot uint16
		c    *call
	}
	byNode := make([]placed, len(live))
	var nodes []*redis.Client
	for i, c := range live {
		byNode[i] = placed{-1, requestSlot(c.req.Key), c}
	}
	// Slot order first, so that each slot's node is looked up once.
	slices.SortStableFunc(byNode, func(x, y placed) int { return cmp.Compare(x.slot, y.slot) })
	for i := range byNode {
		if i > 0 && byNode[i].slot == byNode[i-1].slot {
			byNode[i].node = byNode[i-1].node
			continue
		}
		// The tag hashes to the request's slot: it holds no brace.
		n, err := b.cluster.MasterForKey(ctx, tag(byNode[i].c.req.Key))
		if err != nil {
			continue // slot calls: go-redis reports what is wrong
		}
		j := slices.Index(nodes, n)
		if j < 0 {
			j = len(nodes)
			nodes = append(nodes, n)
		}
		byNode[i].node = j
	}
	// Stable: a slot's decisions are decided in arrival order.
	slices.SortStableFunc(byNode, func(x, y placed) int { return cmp.Compare(x.node, y.node) })
	for i := range byNode {
		live[i] = byNode[i].c
	}
	res = append(res, make([]result, len(live))...)
	calls := make([]slotCall, 0, len(nodes)+1)
	sameSlot := func(i, j int) bool { return byNode[j].slot == byNode[i].slot }
	sameNode := func(i, j int) bool { return byNode[i].node >= 0 && byNode[j].node == byNode[i].node }
	for i := 0; i < len(live); {
		j := i + 1
		for j < len(live) && sameSlot(i, j) {
			j++
		}
		node := false
		if j < len(live) && sameNode(i, j) {
			node = true
			for j < len(live) && sameNode(i, j) {
				j++
			}
		}
		var a, w int
		a, w = len(args), len(nwin)
		keys, args, nwin = b.command(live[i:j], keys, args, nwin, node)
		// Each call keeps its own command; later appends may move args and
		// nwin, never into these.
		calls = append(calls, slotCall{calls: live[i:j], args: args[a:len(args):len(args)],
			nwin: nwin[w:len(nwin):len(nwin)], res: res[i:j], node: node})
		i = j
	}
	ran := false
	_, err := s.breaker.Execute(func() (any, error) {
		ran = true
		err := b.pipeline(ctx, calls)
		if again := b.elsewhere(calls); len(again) > 0 {
			if err2 := b.pipeline(ctx, again); err == nil {
				err = err2
			}
			calls = append(calls, again...)
		}
		return nil, err
	})
	for i := range calls {
		sc := &calls[i]
		e := sc.err
		if !ran {
			e = err // the breaker is open
		}
		if sc.read && e == nil {
			for j, c := range sc.calls {
				if !sc.res[j].elsewhere { // else answered by its own call
					c.res, c.err = sc.res[j], nil
					c.done <- struct{}{}
				}
			}
			continue
		}
		var r replyReader
		if e == nil {
			r = replyReader{parsed: sc.cmd.Val(), isParsed: true}
		}
		b.deliver(sc.calls, &r, e, sc.nwin, sc.res)
	}
	clear(args)
	return keys, args, res, nwin
}

// elsewhere reads the replies of the node calls among calls and returns
// a slot call for each request that one found not on its node.
func (b *batcher) elsewhere(calls []slotCall) []slotCall {
	var (
		moved []*call
		again []slotCall
	)
	for i := range calls {
		sc := &calls[i]
		if !sc.node || sc.err != nil {
			continue
		}
		r := replyReader{parsed: sc.cmd.Val(), isParsed: true}
		if sc.err = parseReply(&r, func(i int) int { return sc.nwin[i] }, sc.res, true); sc.err != nil {
			continue
		}
		sc.read = true
		for j, c := range sc.calls {
			if sc.res[j].elsewhere {
				moved = append(moved, c)
			}
		}
	}
	b.s.stats.resent.Add(uint64(len(moved)))
	// moved is in slot order (a node call's requests are): one call per
	// slot, with buffers of its own.
	for i := 0; i < len(moved); {
		j := i + 1
		for j < len(moved) && requestSlot(moved[j].req.Key) == requestSlot(moved[i].req.Key) {
			j++
		}
		_, args, nwin := b.command(moved[i:j], nil, nil, nil, false)
		again = append(again, slotCall{calls: moved[i:j], args: args, nwin: nwin, res: make([]result, j-i)})
		i = j
	}
	return again
}

// pipeline sends calls in one Cluster pipeline and sets each one's
// command and error. A call answered NOSCRIPT is sent again as EVAL, and
// one answered TRYAGAIN (its keys split mid-migration; it ran nowhere)
// again after a pause, as roundTrip does, together in the next pipeline.
// It returns the error the breaker counts: the first outage, else the
// first error.
func (b *batcher) pipeline(ctx context.Context, calls []slotCall) error {
	s := b.s
	left := timeLeft(ctx)
	pending := make([]*slotCall, len(calls))
	for i := range calls {
		pending[i] = &calls[i]
	}
	for try := 1; ; try++ {
		pipe := b.cluster.Pipeline()
		for _, sc := range pending {
			sc.cmd = scriptCmd{redis.NewCmd(ctx, sc.args...)}
			_ = pipe.Process(ctx, sc.cmd)
		}
		s.stats.roundTrips.Add(uint64(len(pending)))
		_, _ = pipe.Exec(ctx) // each command holds its own error
		again, wait := pending[:0], false
		for _, sc := range pending {
			sc.err = sc.cmd.Err()
			switch {
			case sc.err == nil: // the common case, without errors.As's allocation
			case isNoScript(sc.err):
				sc.args[0], sc.args[1] = "eval", takeSource
				again = append(again, sc)
			case isTryAgain(sc.err):
				wait = true
				again = append(again, sc)
			}
		}
		if len(again) == 0 || try > maxTryAgain ||
			wait && !pause(ctx, time.Duration(try)*10*time.Millisecond) {
			break
		}
		pending = again
	}
	var first, outage error
	for i := range calls {
		sc := &calls[i]
		if sc.err == nil {
			continue
		}
		sc.err = s.queued(left, deadlineErr(ctx, sc.err))
		if !isQueued(sc.err) {
			s.lastErr.Store(&sc.err)
		}
		if first == nil {
			first = sc.err
		}
		if outage == nil && isOutage(sc.err) {
			outage = sc.err
		}
	}
	if outage != nil {
		return outage
	}
	return first
}
