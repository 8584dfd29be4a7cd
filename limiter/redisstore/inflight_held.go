package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// heldSlots are the Redis slots this store holds for its callers, which
// one goroutine renews in the background until they are released, and
// the orphans: slots the store may hold that no caller will release (a
// hold whose reply was lost, a release that failed), which it gives back.
//
// Renewal cadence: the goroutine wakes every eighth of the shortest lease
// it has seen, and renews each slot whose last successful hold was sent a
// quarter of its lease ago or more: a slot is renewed every quarter to
// three eighths of its lease, so that two renewals in a row may fail
// (a breaker open, a timeout) before its lease runs out. Times are this
// process's monotonic clock; Redis's TIME judges the lease itself. A
// renewal is a hold of the slot's own token: it extends the slot when
// Redis still has it, and otherwise (the lease ran out while Redis was
// away, or Redis restarted without its data) takes it again only if the
// cap has room, so the cap is never exceeded by a renewal racing an
// expiry; a slot that found no room is lost (Stats.SlotsLost): its
// request runs on without a slot (TestInFlightRestartWithoutData).
//
// The renewals and the releases of orphans share rounds with each other
// (one script call per server for up to 64), and with no decision.
type heldSlots struct {
	s        *Store
	shards   [nShards]heldShard
	n        atomic.Int64 // slots held
	minLease atomic.Int64 // the shortest lease seen, ns

	mu      sync.Mutex
	orphans []orphan
	started bool
	stopped bool
	wake    chan struct{} // a shorter lease than the tick was made for
	stop    chan struct{}
	done    sync.WaitGroup
}

type heldShard struct {
	mu sync.Mutex
	m  map[uint64]*heldSlot
	_  [48]byte
}

// A heldSlot is one slot this store took in Redis. The fields after
// slotOp are guarded by its shard's mutex.
type heldSlot struct {
	slotOp
	token    uint64
	key      string
	policy   *limiter.Policy
	lease    time.Duration
	renewed  time.Time // when the last hold that succeeded was sent
	renewing bool      // a renewal is in flight
	gone     bool      // released while a renewal was in flight
}

// An orphan is a slot to give back once no call that may take it can
// still run (notBefore), until its lease has surely ended (until).
type orphan struct {
	hs               *heldSlot
	notBefore, until time.Time
}

// maxOrphans bounds the orphans kept: past it (Redis away under heavy
// traffic) a slot that may be held is left to its lease.
const maxOrphans = 1 << 14

func (h *heldSlots) init(s *Store) {
	h.s = s
	h.wake, h.stop = make(chan struct{}, 1), make(chan struct{})
	for i := range h.shards {
		h.shards[i].m = map[uint64]*heldSlot{}
	}
}

func (h *heldSlots) shard(token uint64) *heldShard {
	return &h.shards[token*0x9E3779B97F4A7C15>>58]
}

// add records hs, whose hold was sent at sent and succeeded.
func (h *heldSlots) add(hs *heldSlot, sent time.Time) {
	sh := h.shard(hs.token)
	sh.mu.Lock()
	hs.renewed = sent
	sh.m[hs.token] = hs
	sh.mu.Unlock()
	h.n.Add(1)
	for {
		old := h.minLease.Load()
		if old != 0 && int64(hs.lease) >= old {
			break
		}
		if h.minLease.CompareAndSwap(old, int64(hs.lease)) {
			select { // the renewer sleeps for a tick of the longer lease
			case h.wake <- struct{}{}:
			default:
			}
			break
		}
	}
	h.start()
}

// remove forgets token's slot and returns it, or nil when the store
// holds none by that token (released already, or lost).
func (h *heldSlots) remove(token uint64) *heldSlot {
	sh := h.shard(token)
	sh.mu.Lock()
	hs := sh.m[token]
	if hs != nil {
		delete(sh.m, token)
		hs.gone = true
	}
	sh.mu.Unlock()
	if hs != nil {
		h.n.Add(-1)
	}
	return hs
}

// orphan has hs given back in the background, once a call that may take
// it, due by deadline, can no longer be running.
func (h *heldSlots) orphan(hs *heldSlot, deadline time.Time) {
	t := h.s.cfg.timeout
	h.mu.Lock()
	if len(h.orphans) < maxOrphans && !h.stopped {
		h.orphans = append(h.orphans, orphan{hs: hs, notBefore: deadline.Add(t), until: deadline.Add(hs.lease)})
	}
	h.mu.Unlock()
	h.start()
}

// start starts the renewing goroutine, once.
func (h *heldSlots) start() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started || h.stopped {
		return
	}
	h.started = true
	h.done.Add(1)
	go h.loop()
}

// close stops the renewing goroutine and waits for it: the slots held
// then are left to their leases. Only the first call closes stop (Store's
// Close is idempotent); every call waits, so that none returns while the
// goroutine still runs.
func (h *heldSlots) close() {
	h.mu.Lock()
	if h.started && !h.stopped {
		close(h.stop)
	}
	h.stopped = true
	h.mu.Unlock()
	h.done.Wait()
}

// minTick bounds how often the renewer wakes.
const minTick = 10 * time.Millisecond

// tick is how long the renewer sleeps: an eighth of the shortest lease.
func (h *heldSlots) tick() time.Duration {
	return max(minTick, time.Duration(h.minLease.Load())/8)
}

func (h *heldSlots) loop() {
	defer h.done.Done()
	for {
		t := time.NewTimer(h.tick())
		select {
		case <-h.stop:
			t.Stop()
			return
		case <-h.wake:
			t.Stop()
			continue
		case <-t.C:
		}
		h.renew(time.Now())
	}
}

// renew sends, in shared rounds, a hold for every slot due for renewal
// at now and a release for every orphan due, and records what came back.
func (h *heldSlots) renew(now time.Time) {
	var (
		calls []*call
		held  []*heldSlot // the slot of each call
	)
	deadline := now.Add(h.s.cfg.timeout)
	add := func(hs *heldSlot, op string) {
		c := &call{ctx: context.Background(), deadline: deadline, done: make(chan struct{}, 1),
			req: limiter.Request{Key: hs.key, Policy: hs.policy}, slot: hs.slotOp}
		c.slot.op = op
		calls, held = append(calls, c), append(held, hs)
	}
	for i := range h.shards {
		sh := &h.shards[i]
		sh.mu.Lock()
		for _, hs := range sh.m {
			if !hs.renewing && now.Sub(hs.renewed) >= hs.lease/4 {
				hs.renewing = true
				add(hs, opHold)
			}
		}
		sh.mu.Unlock()
	}
	renewals := len(calls)
	h.mu.Lock()
	kept := h.orphans[:0]
	for _, o := range h.orphans {
		switch {
		case !now.Before(o.until): // its lease has ended: nothing to give back
		case now.Before(o.notBefore):
			kept = append(kept, o)
		default:
			add(o.hs, opRelease)
		}
	}
	clear(h.orphans[len(kept):])
	h.orphans = kept
	h.mu.Unlock()
	if len(calls) == 0 {
		return
	}
	h.s.slotBatch.doAll(calls)
	for i, c := range calls {
		if c.err == nil {
			h.s.reportCorruptSlot(held[i].slotOp.key, &c.res)
		}
	}
	for i, c := range calls[:renewals] {
		h.renewed(held[i], c, now)
	}
	for i, c := range calls[renewals:] {
		if hs := held[renewals+i]; c.err != nil {
			h.mu.Lock()
			if !h.stopped && len(h.orphans) < maxOrphans {
				h.orphans = append(h.orphans, orphan{hs: hs, notBefore: now, until: now.Add(hs.lease)})
			}
			h.mu.Unlock()
		}
	}
}

// renewed records the answer c to a renewal of hs sent at sent.
func (h *heldSlots) renewed(hs *heldSlot, c *call, sent time.Time) {
	sh := h.shard(hs.token)
	sh.mu.Lock()
	hs.renewing = false
	gone := hs.gone
	var lost bool
	switch {
	case c.err != nil: // tried again next tick; the lease has time for it
		h.s.stats.renewFailures.Add(1)
	case c.res.allowed:
		hs.renewed = sent
		h.s.stats.renewals.Add(1)
	case !gone:
		delete(sh.m, hs.token)
		lost = true
	}
	sh.mu.Unlock()
	switch {
	case lost:
		h.n.Add(-1)
		h.s.stats.slotsLost.Add(1)
	case gone && (c.err != nil || c.res.allowed):
		// Released while this renewal was in flight, which may have
		// taken the slot again after the release ran: give it back.
		h.orphan(hs, sent)
	}
}
