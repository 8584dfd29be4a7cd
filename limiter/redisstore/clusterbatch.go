package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batch on a Cluster. The batcher gathers concurrent decisions as it does
// on one node; a round then groups its decisions by the master that
// serves their slot, as go-redis's slot map has it (every key of a
// decision shares the client key's hash tag, hence its slot), and sends
// each master one script call for all of them, a node call, straight to
// that master's client. A node call declares no key: Redis neither
// redirects it nor runs it under another node's ASKING, and the script
// touches each request's keys undeclared, which Redis allows a script
// without flags as long as the node serves them now (take.lua). A
// request whose slot that master no longer serves (a slot moved or
// migrating since go-redis last read the slot map, a failover) is charged
// nothing there and is sent again in the same round in a call of its own
// for its slot, with its keys declared, through a Cluster pipeline, which
// follows MOVED and ASK and answers TRYAGAIN; decisions whose master is
// not known go that way from the start. Neither kind is ever sent twice
// after a network error. What the batcher adds on one node is kept per
// round: the deadline of its oldest decision, one breaker call, the
// queue's timeout accounting.
//
// Batch on a Ring is the same round with the Ring's shards for masters:
// the Ring names each key's shard (the shard it would route the key's
// commands to), and each shard gets one script call with its keys
// declared, a shard being a server of its own. A Ring moves no keys, so
// nothing comes back; a decision whose shard is down fails, as the Ring's
// own command would, until the Ring's heartbeat takes the shard out.

// newSlotBatcher returns a batcher sending through a Cluster client.
func newSlotBatcher(s *Store, c *redis.ClusterClient) *batcher {
	// A round already runs a call on every node it touches, in parallel:
	// half as many rounds as on one node keep the nodes as busy with
	// larger calls (measured on three masters, 64 callers, decisions/s:
	// 1 round 83k, 2 rounds 88k, 4 rounds 77k). Each round holds one
	// connection per node.
	o := c.Options()
	inFlight := max(1, s.cfg.batchInFlight/2)
	if o.PoolSize > 0 {
		inFlight = min(inFlight, o.PoolSize)
	}
	// A client that reads from replicas opens every connection with
	// READONLY, on which a master demoted by a failover the slot map has
	// not caught up with would answer a node call's probe as a replica
	// instead of redirecting it: such a client gets slot calls only,
	// which go-redis routes itself.
	nodeCalls := !o.ReadOnly && !o.RouteByLatency && !o.RouteRandomly
	return &batcher{s: s, cluster: c, nodeCalls: nodeCalls, size: s.cfg.batchSize, inFlight: inFlight}
}

// newShardBatcher returns a batcher sending through a Ring: one script
// call per shard, on the shard's own client, for the decisions whose keys
// the Ring puts there (GetShardClientForKey, the Ring's own routing). As
// on a Cluster, half as many rounds as on one node (measured on three
// shards, 64 callers, decisions/s: 2 rounds 88.6k, 4 rounds 73.4k).
func newShardBatcher(s *Store, r *redis.Ring) *batcher {
	o := r.Options()
	inFlight := max(1, s.cfg.batchInFlight/2)
	if o.PoolSize > 0 {
		inFlight = min(inFlight, o.PoolSize)
	}
	return &batcher{s: s, ring: r, nodeCalls: true, size: s.cfg.batchSize, inFlight: inFlight}
}

// A slotCall is one round's script call: a node call, sent to client,
// the decisions of every slot one master serves; or a slot call, the
// decisions of one slot, sent through the Cluster.
type slotCall struct {
	calls  []*call
	args   []any // the command
	nwin   []int
	res    []result
	client *redis.Client // a node call's master (a Ring's shard); nil for a slot call
	// undeclared: a Cluster's node call, its keys in the arguments (a
	// Ring's shard call declares them: a shard is a server of its own).
	undeclared bool
	reply      replyReader // a node call's reply
	read       bool        // res holds a node call's results
	cmd        scriptCmd   // a slot call's command
	err        error
}

// sendSlots sends one round, live, due by deadline, and hands each call
// its result. It returns its buffers for reuse.
func (b *batcher) sendSlots(live []*call, deadline time.Time, keys []string, args []any, res []result, nwin []int) ([]string, []any, []result, []int) {
	s := b.s
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	var calls []slotCall
	ran := false
	_, err := s.breaker.Execute(func() (any, error) {
		ran = true
		left := timeLeft(ctx)
		calls, keys, args, res, nwin = b.group(ctx, live, keys, args, res, nwin)
		err := b.sendNodeCalls(ctx, calls)
		var later, unrouted []*slotCall
		for i := range calls {
			switch sc := &calls[i]; {
			case sc.client != nil:
			case sc.err != nil: // a Ring with no shard for its keys
				unrouted = append(unrouted, sc)
			default:
				later = append(later, sc)
			}
		}
		if e := b.account(ctx, left, unrouted); err == nil {
			err = e
		}
		again := b.elsewhere(calls)
		// What the node calls decided is answered now, not after the
		// slot calls (which may pause for TRYAGAIN mid-migration).
		for i := range calls {
			if sc := &calls[i]; sc.read {
				for j, c := range sc.calls {
					if !sc.res[j].elsewhere { // else answered by its own call
						c.res, c.err = sc.res[j], nil
						c.done <- struct{}{}
					}
				}
			}
		}
		for i := range again {
			later = append(later, &again[i])
		}
		if len(later) > 0 {
			if err2 := b.pipeline(ctx, later); err == nil {
				err = err2
			}
		}
		calls = append(calls, again...)
		// The breaker, shared by every server, counts a round as an
		// outage only when no server answered: one master or shard down
		// fails its own decisions (and a Cluster reloads its slot map, a
		// Ring's heartbeat takes the shard out) without refusing the
		// others'.
		for i := range calls {
			if calls[i].err == nil {
				return nil, nil
			}
		}
		return nil, err
	})
	if !ran { // the breaker is open
		b.deliver(live, nil, err, nil, nil)
	}
	for i := range calls {
		sc := &calls[i]
		e := sc.err
		switch {
		case sc.read: // answered above
		case e == nil:
			r := replyReader{parsed: sc.cmd.Val(), isParsed: true}
			b.deliver(sc.calls, &r, nil, sc.nwin, sc.res)
		default:
			b.deliver(sc.calls, nil, e, sc.nwin, sc.res)
		}
	}
	clear(args)
	return keys, args, res, nwin
}

// group orders live by the master serving each decision's slot, as
// go-redis's slot map has it (on a Ring, by the shard of its key),
// arrival order kept within a slot, and builds the round's calls: one
// node call per master or shard known; for the decisions whose master is
// not known, one slot call per slot (on a Ring, which has no other way to
// a shard, a call that fails with the Ring's error).
func (b *batcher) group(ctx context.Context, live []*call, keys []string, args []any, res []result, nwin []int) ([]slotCall, []string, []any, []result, []int) {
	type placed struct {
		node int // index in nodes; -1: not known
		slot uint16
		c    *call
	}
	byNode := make([]placed, len(live))
	var (
		nodes     []*redis.Client
		lookupErr error
	)
	for i, c := range live {
		byNode[i] = placed{-1, requestSlot(c.req.Key), c}
	}
	// Slot order first, so that each slot's master is looked up once. A
	// Ring hashes the whole tag, not the slot: two keys of one slot may
	// live on two shards, so there only the same key shares a lookup.
	slices.SortStableFunc(byNode, func(x, y placed) int { return cmp.Compare(x.slot, y.slot) })
	for i := range byNode {
		if i > 0 && byNode[i].slot == byNode[i-1].slot &&
			(b.cluster != nil || byNode[i].c.req.Key == byNode[i-1].c.req.Key) {
			byNode[i].node = byNode[i-1].node
			continue
		}
		if !b.nodeCalls {
			continue
		}
		n, err := b.serverFor(ctx, byNode[i].c.req.Key)
		if err != nil {
			lookupErr = err
			continue // a slot call: go-redis reports what is wrong
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
	for i := 0; i < len(live); {
		j := i + 1
		node := byNode[i].node
		for j < len(live) && byNode[j].node == node && (node >= 0 || byNode[j].slot == byNode[i].slot) {
			j++
		}
		a, w := len(args), len(nwin)
		undeclared := node >= 0 && b.cluster != nil
		keys, args, nwin = b.command(live[i:j], keys, args, nwin, undeclared)
		// Each call keeps its own command; later appends may move args and
		// nwin, never into these.
		sc := slotCall{calls: live[i:j], args: args[a:len(args):len(args)], nwin: nwin[w:len(nwin):len(nwin)],
			res: res[i:j], undeclared: undeclared}
		switch {
		case node >= 0:
			sc.client = nodes[node]
		case b.ring != nil:
			sc.err = lookupErr // no other way to a shard
		}
		calls = append(calls, sc)
		i = j
	}
	return calls, keys, args, res, nwin
}

// serverFor returns the client of the server that holds key's keys: its
// slot's master on a Cluster, its shard on a Ring. The tag hashes as the
// keys do (it holds no brace).
func (b *batcher) serverFor(ctx context.Context, key string) (*redis.Client, error) {
	if b.ring != nil {
		return b.ring.GetShardClientForKey(tag(key))
	}
	return b.cluster.MasterForKey(ctx, tag(key))
}

// sendNodeCalls sends the node calls among calls, each to its master, in
// parallel, and reads their replies. A call that failed (a master gone or
// unreachable, READONLY from a demoted one, the cluster down) has the
// client reload its slot map, as go-redis does for the commands it routes
// itself: the next rounds go where the slots now live. It returns the
// error the breaker counts, as pipeline does.
func (b *batcher) sendNodeCalls(ctx context.Context, calls []slotCall) error {
	s := b.s
	left := timeLeft(ctx)
	var (
		wg   sync.WaitGroup
		sent []*slotCall
	)
	for i := range calls {
		sc := &calls[i]
		if sc.client == nil {
			continue
		}
		sent = append(sent, sc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.reply, sc.err = s.eval(ctx, sc.client, sc.args, true)
			if sc.err == nil {
				sc.err = parseReply(&sc.reply, func(i int) int { return sc.nwin[i] }, sc.res, sc.undeclared)
				sc.read = sc.err == nil
			}
		}()
	}
	wg.Wait()
	for _, sc := range sent {
		if b.cluster != nil && sc.err != nil && !errors.Is(sc.err, ErrBadReply) {
			b.cluster.ReloadState(ctx)
			break
		}
	}
	return b.account(ctx, left, sent)
}

// elsewhere returns a slot call for each slot of the requests that the
// node calls among calls found off their master.
func (b *batcher) elsewhere(calls []slotCall) []slotCall {
	var (
		moved []*call
		again []slotCall
	)
	for i := range calls {
		sc := &calls[i]
		if !sc.read {
			continue
		}
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
func (b *batcher) pipeline(ctx context.Context, calls []*slotCall) error {
	s := b.s
	left := timeLeft(ctx)
	pending := slices.Clone(calls)
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
	return b.account(ctx, left, calls)
}

// account files the errors of calls, sent with left of the round's
// time: a call that spent its time queued in the client is not an
// outage; the last error is kept for Health. It returns the error the
// breaker counts: the first outage, else the first error.
func (b *batcher) account(ctx context.Context, left time.Duration, calls []*slotCall) error {
	s := b.s
	var first, outage error
	for _, sc := range calls {
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
