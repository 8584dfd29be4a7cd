package redisstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// One round, the same on every kind of client and for every script (the
// decisions' take.lua, the in-flight slots' inflight.lua, the settles'
// settle.lua: see script):
// the router names each decision's dest, a server; the decisions of one
// dest go out together, in one script call to that server (a single
// node, a Cluster master, a Ring shard), or in one call per client key
// when every key must be declared (Store.declared) or the dest is the
// Plain path's client; the dests are sent in parallel, each through its
// own breaker, whichever way its calls go. NOSCRIPT, TRYAGAIN, MOVED and
// ASK, resends, refusals and the accounting of failures are handled
// here, once.
//
// A Cluster master's call is a node call: it declares no key, so Redis
// neither redirects it nor runs it under another node's ASKING, and the
// script touches each request's keys undeclared, which Redis allows a
// script without flags for the slots the node serves now (take.lua). A
// request whose slot that master no longer serves (moved, migrating, a
// failover go-redis has not seen yet, a cluster down) is charged nothing
// there and is sent again in the same round, in a call of its own for
// its client key with its keys declared (one slot), which go-redis
// routes by MOVED and ASK, through the breaker of the master the slot
// map names: the first that call reaches. A failed call to a Cluster
// master has the client reload its slot map. No script call is ever
// sent twice after a network error (call.go).
//
// Some hosts refuse, before running it, a call that declares no key or
// the keys of many client keys (isRefusal): DragonflyDB refuses
// undeclared keys; a proxy that routes a script by its first declared
// key (Envoy's Redis proxy, twemproxy, managed services' proxies) cannot
// route a node call, and a Cluster behind one answers CROSSSLOT to a
// call whose keys span slots. The round sends such a call's requests again, a call per
// client key with its keys declared, as it does those found off their
// master, and from then on the store sends every call that way
// (Store.declare, declared.go).

// roundBuf holds one loop's buffers, reused round after round.
type roundBuf struct {
	keys   []string
	args   []any
	nwin   []int
	res    []result
	placed []placed
	cmds   []scriptCall
	groups []group
	pols   []*limiter.Policy // a call's policies (script.go)
}

// placed is one decision with its dest (nil when the router found none:
// err) and its slot (for calls per slot).
type placed struct {
	d    *dest
	err  error
	slot uint16
	rank int // the dest's place in the round
	c    *call
}

// A scriptCall is one script call of a round and what came back.
type scriptCall struct {
	calls []*call
	args  []any // the command
	nwin  []int // each call's number of windows
	res   []result
	reply replyReader
	err   error
	read  bool // res holds the results
}

// A group is the calls of a round for one dest (none when d is nil: the
// router's error is in each call).
type group struct {
	d    *dest
	cmds []scriptCall
	// perKey: each call holds the decisions of one client key, its keys
	// declared (one slot), sent through d.keyed; else one call holds all
	// of d's, a node call on a Cluster master.
	perKey bool
}

// node reports whether g's call is a node call, declaring no key.
func (g *group) node() bool { return g.d.node && !g.perKey }

// round sends live, due by deadline, and hands each call its result as
// soon as its dest has answered: a server slow to fail holds up only its
// own decisions. It returns the longest time a dest that answered took
// (0 when none answered), the round trip the batcher measures, and when
// that answer came, before any call was handed its result.
func (b *batcher) round(live []*call, deadline time.Time, buf *roundBuf) (time.Duration, time.Time) {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	b.build(ctx, live, buf, b.s.declared.Load())
	var (
		mu    sync.Mutex
		moved []*call
		took  time.Duration
		at    time.Time
	)
	b.sendAll(ctx, buf.groups, func(g *group, d time.Duration) {
		now := time.Now()
		var answered bool
		m := deliver(g, &answered)
		mu.Lock()
		moved = append(moved, m...)
		if answered && d > took {
			took, at = d, now
		}
		mu.Unlock()
	})
	clear(buf.args)
	if len(moved) > 0 {
		b.s.stats.resent.Add(uint64(len(moved)))
		var again roundBuf
		b.build(ctx, moved, &again, true)
		b.sendAll(ctx, again.groups, func(g *group, _ time.Duration) {
			var answered bool
			deliver(g, &answered) // calls per key: none comes back
		})
	}
	return took, at
}

// deliver hands each call of g its result, except those a node call found
// off its master and those of a call refused for its keys, which it
// returns (never from calls per key: see exec); answered reports whether
// any call of g was answered.
func deliver(g *group, answered *bool) (moved []*call) {
	for i := range g.cmds {
		sc := &g.cmds[i]
		*answered = *answered || sc.read
		for k, c := range sc.calls {
			switch {
			case sc.read && sc.res[k].elsewhere:
				moved = append(moved, c) // answered by its own call
			case sc.read:
				c.res, c.err = sc.res[k], nil
				c.done <- struct{}{}
			default:
				c.err = sc.err
				c.done <- struct{}{}
			}
		}
	}
	return moved
}

// build routes live and builds the round's groups in buf: live is
// reordered by dest, and by slot and key within a dest, arrival order
// kept within a key (so a key's decisions are decided in arrival order).
// perKey: every call holds one client key's decisions, its keys declared.
func (b *batcher) build(ctx context.Context, live []*call, buf *roundBuf, perKey bool) {
	buf.keys, buf.args, buf.nwin = buf.keys[:0], buf.args[:0], buf.nwin[:0]
	buf.cmds, buf.groups = buf.cmds[:0], buf.groups[:0]
	if cap(buf.res) < len(live) {
		buf.res = make([]result, len(live))
	}
	buf.res = buf.res[:len(live)]
	clear(buf.res)
	if r, ok := b.router.(oneDest); ok && r.d.one && !perKey {
		// One server: one call (the common case, with nothing to sort).
		b.appendCmd(live, buf.res, false, buf)
		buf.groups = append(buf.groups, group{d: r.d, cmds: buf.cmds})
		return
	}
	pl := buf.placed[:0]
	for _, c := range live {
		pl = append(pl, placed{slot: requestSlot(c.req.Key), c: c})
	}
	// Slot and key order first, so that each slot's dest is looked up
	// once. A Ring hashes the whole tag, not the slot: two keys of one
	// slot may live on two shards, so there only the same key shares a
	// lookup. A router's error concerns every key: it is asked no more.
	slices.SortStableFunc(pl, func(x, y placed) int {
		return cmp.Or(cmp.Compare(x.slot, y.slot), strings.Compare(x.c.req.Key, y.c.req.Key))
	})
	_, ring := b.router.(ringRouter)
	var (
		order  []*dest
		failed error
	)
	for i := range pl {
		if i > 0 && pl[i].slot == pl[i-1].slot && (!ring || pl[i].c.req.Key == pl[i-1].c.req.Key) {
			pl[i].d, pl[i].err, pl[i].rank = pl[i-1].d, pl[i-1].err, pl[i-1].rank
			continue
		}
		if pl[i].err = failed; failed == nil {
			if pl[i].d, pl[i].err = b.router.route(ctx, pl[i].c.req.Key); pl[i].err != nil {
				pl[i].err = named(pl[i].err)
				failed = pl[i].err
			}
		}
		if pl[i].rank = slices.Index(order, pl[i].d); pl[i].rank < 0 {
			pl[i].rank, order = len(order), append(order, pl[i].d)
		}
	}
	slices.SortStableFunc(pl, func(x, y placed) int { return cmp.Compare(x.rank, y.rank) })
	buf.placed = pl
	// The calls of each dest: one for a server, unless perKey; one per
	// client key otherwise; then the groups, once buf.cmds has stopped
	// moving.
	type start struct {
		d    *dest
		from int
	}
	var starts []start
	for i := 0; i < len(pl); {
		d, j := pl[i].d, i+1
		whole := d == nil || d.one && !perKey
		for j < len(pl) && pl[j].d == d && (whole || pl[j].c.req.Key == pl[i].c.req.Key) {
			j++
		}
		for k := i; k < j; k++ {
			live[k] = pl[k].c
		}
		if len(starts) == 0 || pl[i-1].d != d {
			starts = append(starts, start{d, len(buf.cmds)})
		}
		if d == nil { // the router's error, delivered as a failed call
			buf.cmds = append(buf.cmds, scriptCall{calls: live[i:j], res: buf.res[i:j], err: pl[i].err})
		} else {
			b.appendCmd(live[i:j], buf.res[i:j], d.node && !perKey, buf)
		}
		i = j
	}
	for k, st := range starts {
		to := len(buf.cmds)
		if k+1 < len(starts) {
			to = starts[k+1].from
		}
		buf.groups = append(buf.groups, group{d: st.d, cmds: buf.cmds[st.from:to],
			perKey: st.d != nil && (perKey || !st.d.one)})
	}
}

// appendCmd appends to buf the script call deciding calls, in order
// (res: room for their results). A node call (undeclared) declares no
// key and passes them in the arguments.
func (b *batcher) appendCmd(calls []*call, res []result, undeclared bool, buf *roundBuf) {
	sc := b.script
	first, a, w := len(buf.keys), len(buf.args), len(buf.nwin)
	for _, c := range calls {
		var n int
		buf.keys, n = sc.keys(buf.keys, c)
		buf.nwin = append(buf.nwin, n)
	}
	// The command: EVALSHA hash numkeys keys... arguments..., or for a
	// node call EVALSHA hash 0 arguments... with the keys among them
	// (see the script's own comment for where).
	if undeclared {
		buf.args = scriptCommand(buf.args, sc.hash(), nil)
		buf.args = sc.args(buf.args, calls, buf.keys[first:], buf)
	} else {
		buf.args = scriptCommand(buf.args, sc.hash(), buf.keys[first:])
		buf.args = sc.args(buf.args, calls, nil, buf)
	}
	// Each call keeps its own command; later appends may move args and
	// nwin, never into these.
	buf.cmds = append(buf.cmds, scriptCall{calls: calls, res: res,
		args: buf.args[a:len(buf.args):len(buf.args)], nwin: buf.nwin[w:len(buf.nwin):len(buf.nwin)]})
}

// sendAll sends each group to its dest, in parallel, and calls done with
// each group, and how long it took, as soon as it is back.
func (b *batcher) sendAll(ctx context.Context, groups []group, done func(*group, time.Duration)) {
	one := func(g *group) {
		start := time.Now()
		b.sendGroup(ctx, g)
		done(g, time.Since(start))
	}
	if len(groups) == 1 {
		one(&groups[0])
		return
	}
	var wg sync.WaitGroup
	for i := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			one(&groups[i])
		}()
	}
	wg.Wait()
}

// sendGroup sends g's calls through its dest's breaker. While the
// breaker is open, the calls fail at once with ErrCircuitOpen.
func (b *batcher) sendGroup(ctx context.Context, g *group) {
	d := g.d
	if d == nil {
		return
	}
	s := b.s
	start := time.Now().UnixNano()
	d.used.Store(start)
	left := timeLeft(ctx)
	ran := false
	_, err := d.breaker.Execute(func() (any, error) {
		ran = true
		b.exec(ctx, g)
		return nil, s.account(ctx, left, start, d, g.cmds)
	})
	if !ran {
		err = circuitOpen(d, err)
		for i := range g.cmds {
			g.cmds[i].err = err
		}
		return
	}
	s.noteCall(d, err)
}

// exec sends g's calls and reads their replies. A call answered NOSCRIPT
// is sent again as EVAL, and one answered TRYAGAIN (its keys split
// mid-migration; it ran nowhere) again after a pause, together in the
// next pass. A call refused for the keys it declares (none, or many
// client keys': isRefusal) ran nowhere: its requests come back as if
// found elsewhere, for the round to send again per key, and the store
// declares every key from then on. A failed call to a Cluster master
// has the client reload its slot map, as go-redis does for the commands
// it routes itself, so the next rounds go where the slots now live.
func (b *batcher) exec(ctx context.Context, g *group) {
	s, d := b.s, g.d
	via, raw := d.p, d.one
	if g.perKey && s.cfg.acks == 0 {
		via, raw = d.keyed, d.one && d.keyed == d.p
	}
	var one [1]*scriptCall
	pending := one[:0]
	for i := range g.cmds {
		pending = append(pending, &g.cmds[i])
	}
	for try := 1; ; try++ {
		if s.cfg.acks > 0 {
			// On the server's own client, each call's keys in its
			// slots, WAIT on the calls' connection (WithReplicaAcks).
			s.sendAcked(ctx, via, pending[0].calls[0].req.Key, pending)
		} else if len(pending) == 1 {
			sc := pending[0]
			sc.reply, sc.err = s.send(ctx, via, sc.args, raw)
		} else {
			s.pipeline(ctx, via, pending)
		}
		again, wait := pending[:0], false
		for _, sc := range pending {
			switch {
			case sc.err == nil: // the common case, without errors.As's work
			case isNoScript(sc.err):
				sc.args[0], sc.args[1] = "eval", b.script.source()
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
	failed := false
	for i := range g.cmds {
		sc := &g.cmds[i]
		switch {
		case sc.err == nil:
			sc.err = b.script.parse(sc, g.node())
			sc.read = sc.err == nil
		case !g.perKey && (g.node() || manyKeys(sc.calls)) && isRefusal(sc.err):
			s.declare(d.name, sc.err)
			for k := range sc.res {
				sc.res[k].elsewhere = true
			}
			sc.err, sc.read = nil, true
		default:
			failed = true
		}
	}
	if cr, ok := b.router.(clusterRouter); ok && failed {
		cr.c.ReloadState(ctx)
	}
}

// manyKeys reports whether calls, one or more, are for more than one
// client key.
func manyKeys(calls []*call) bool {
	for _, c := range calls[1:] {
		if c.req.Key != calls[0].req.Key {
			return true
		}
	}
	return false
}

// pipeline sends calls in one pipeline of p, which routes each.
func (s *Store) pipeline(ctx context.Context, p redis.UniversalClient, calls []*scriptCall) {
	pipe := p.Pipeline()
	cmds := make([]scriptCmd, len(calls))
	for i, sc := range calls {
		cmds[i] = scriptCmd{redis.NewCmd(ctx, sc.args...)}
		_ = pipe.Process(ctx, cmds[i])
	}
	s.stats.roundTrips.Add(uint64(len(calls)))
	_, _ = pipe.Exec(ctx) // each command holds its own error
	for i, sc := range calls {
		v, err := cmds[i].Result()
		sc.reply, sc.err = replyReader{parsed: v, isParsed: true}, err
	}
}

// account names the errors of calls, sent to d at start (Unix ns) with
// left of the round's time: a call whose time ran out while its dials
// failed is named for them (causeOf); a call that spent its time queued
// in the client is not an outage; the last error is kept for d's health events. It returns what
// d's breaker counts: nothing when the server answered any call, else the
// first outage, else the first error.
func (s *Store) account(ctx context.Context, left time.Duration, start int64, d *dest, calls []scriptCall) error {
	var first, outage error
	answered := false
	for i := range calls {
		sc := &calls[i]
		if sc.err == nil {
			answered = true
			continue
		}
		if errors.Is(sc.err, ErrBadReply) {
			continue
		}
		sc.err = s.queued(left, named(causeOf(deadlineErr(ctx, sc.err), d, start)))
		if !isQueued(sc.err) {
			e := sc.err // a copy: sc is reused by the next round
			d.lastErr.Store(&e)
		}
		if first == nil {
			first = sc.err
		}
		if outage == nil && isOutage(sc.err) {
			outage = sc.err
		}
	}
	switch {
	case answered:
		return nil
	case outage != nil:
		return outage
	}
	return first
}
