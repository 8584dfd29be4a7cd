package redisstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// Batch on a Cluster. The batcher gathers concurrent decisions as it does
// on one node, but a script's keys must all lie in one slot, so a round
// groups its decisions by slot (every key of a decision shares the
// client key's hash tag, hence its slot), makes one script call per slot,
// decisions sharing a slot (a hot key's) sharing that call, and sends
// every call of the round in one Cluster pipeline: go-redis splits it
// into one pipeline per node, follows MOVED and ASK per command, and
// never re-sends a pipeline holding a NoRetry command after a network
// error. What the batcher adds on one node is kept per round: the
// deadline of its oldest decision, one breaker call, the queue's timeout
// accounting.

// newSlotBatcher returns a batcher sending through a Cluster client.
func newSlotBatcher(s *Store, c *redis.ClusterClient) *batcher {
	// A round already runs a pipeline on every node it touches, in
	// parallel: half as many rounds as on one node keep the nodes as busy
	// with larger pipelines (measured: 2 rounds beat 4 on three masters,
	// docs/performance.md). Each round holds one connection per node.
	inFlight := max(1, s.cfg.batchInFlight/2)
	if n := c.Options().PoolSize; n > 0 {
		inFlight = min(inFlight, n)
	}
	return &batcher{s: s, cluster: c, size: s.cfg.batchSize, inFlight: inFlight}
}

// A slotCall is one round's script call: the decisions of one slot.
type slotCall struct {
	calls []*call
	args  []any // the command
	nwin  []int
	res   []result
	cmd   scriptCmd
	err   error
}

// sendSlots sends one round, live, due by deadline, and hands each call
// its result. It returns its buffers for reuse.
func (b *batcher) sendSlots(live []*call, deadline time.Time, keys []string, args []any, res []result, nwin []int) ([]string, []any, []result, []int) {
	s := b.s
	type slotted struct {
		slot uint16
		c    *call
	}
	bySlot := make([]slotted, len(live))
	for i, c := range live {
		bySlot[i] = slotted{requestSlot(c.req.Key), c}
	}
	// Stable: a slot's decisions are decided in arrival order.
	slices.SortStableFunc(bySlot, func(x, y slotted) int { return cmp.Compare(x.slot, y.slot) })
	for i := range bySlot {
		live[i] = bySlot[i].c
	}
	res = append(res, make([]result, len(live))...)
	calls := make([]slotCall, 0, len(live))
	for i := 0; i < len(live); {
		j := i + 1
		for j < len(live) && bySlot[j].slot == bySlot[i].slot {
			j++
		}
		a, w := len(args), len(nwin)
		keys, args, nwin = b.command(live[i:j], keys, args, nwin)
		// Each call keeps its own command; later appends may move args and
		// nwin, never into these.
		calls = append(calls, slotCall{calls: live[i:j], args: args[a:len(args):len(args)], nwin: nwin[w:len(nwin):len(nwin)], res: res[i:j]})
		i = j
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	ran := false
	_, err := s.breaker.Execute(func() (any, error) {
		ran = true
		return nil, b.pipeline(ctx, calls)
	})
	cancel()
	for i := range calls {
		sc := &calls[i]
		e := sc.err
		if !ran {
			e = err // the breaker is open
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
