package linearize

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

// The recorder's clocks. Every replica's fake clock moves on by
// clockSpeed times the real time elapsed, once per clockTick, so that a
// one-second window lasts a quarter of a second: a window's key in
// Redis, whose expiry is computed from the fake instant, always
// outlives the window (the clock runs ahead of Redis's, never behind).
const (
	clockTick   = 10 * time.Millisecond
	clockSpeed  = 4
	clockTickMs = clockSpeed * int64(clockTick/time.Millisecond)
	// unknownSpan bounds when a failed operation may still take effect:
	// Redis runs a call it has received or never (a paused Redis when it
	// resumes, 300 ms at most here; a restarted or killed one never), and
	// the client gives up on a call, closing its connection, within the
	// store's timeout (100 ms).
	unknownSpan = time.Second
	// orphanSpan bounds when a slot whose hold failed is given back: in
	// the background once its call cannot be running, or when its lease
	// (10 s) ends.
	orphanSpan = 12 * time.Second
	// afterEvent is how long a history goes on once its failover is
	// over, for what it left to be read.
	afterEvent = 2 * time.Second
)

// epoch0 is where every fake clock starts: a window boundary of every
// policy here.
var epoch0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A replica is one application process: its own store value, limiter,
// in-flight cap and fake clock. Workers hold mu for reading across each
// operation and the clock moves under mu held for writing, so that the
// instant an operation reads is the one recorded.
type replica struct {
	id     int
	mu     sync.RWMutex
	clock  *limitertest.Clock
	epoch  int // steps back of the clock so far (guarded by mu)
	lim    *limiter.Limiter
	slots  limiter.SlotStore
	req    limiter.SlotRequest
	server bool // Redis's clock decides: the fake clock places nothing
	// proxies are its own ways to Redis (to its server, or one to each
	// node), where aimed losses drop its replies (none: not aimed at).
	proxies []*redistest.Proxy
	// health is its Redis store's (nil: memory), changes how many
	// health changes the store told its observer of.
	health  func() map[string]redisstore.Health
	changes *atomic.Int64
}

// shut returns, before a call, how many health changes rp's store has
// seen, and whether every breaker of it was open. While they stay open
// (no change since) the store sends nothing to Redis
// (redisstore.Unavailable): a decision WithFailLocal's fallback then
// makes replaces no call, and needs no ghost.
func (rp *replica) shut() (changes int64, open bool) {
	if rp.health == nil {
		return 0, false
	}
	changes = rp.changes.Load()
	hs := rp.health()
	for _, h := range hs {
		if h != redisstore.Unavailable {
			return changes, false
		}
	}
	return changes, len(hs) > 0
}

// stayedShut reports whether a call made after shut returned (changes,
// open) sent nothing: every breaker open then, and no change since.
func (rp *replica) stayedShut(changes int64, open bool) bool {
	return open && rp.changes.Load() == changes
}

// A recorder collects a run's operations and faults.
type recorder struct {
	start  time.Time
	mu     sync.Mutex
	ops    []Op
	faults []Fault
	token  atomic.Int64
	// refused counts the operations that failed sending nothing (see
	// unsent): left out of the history. failures are every operation
	// that failed, either way (guarded by mu).
	refused  atomic.Int64
	failures []failure
	// local counts the decisions and slots WithFailLocal's fallback
	// answered, shut those of them it answered with every breaker open,
	// which replaced no call (no ghost).
	local, shut atomic.Int64
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

func (r *recorder) add(op ...Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op...)
	r.mu.Unlock()
}

// failed notes an operation that failed.
func (r *recorder) failed(f failure) {
	r.mu.Lock()
	r.failures = append(r.failures, f)
	r.mu.Unlock()
}

func (r *recorder) fault(f Fault) {
	r.mu.Lock()
	r.faults = append(r.faults, f)
	r.mu.Unlock()
}

// A run records one history of one configuration with one seed.
type run struct {
	t       testing.TB
	name    string
	seed    uint64
	spec    Spec
	reps    []*replica
	workers int           // per replica
	length  time.Duration // of the recording
	phase   time.Duration // how long a key is used: the keys of a phase are its partitions
	keys    int           // per phase
	faults  []faultKind
	timeout time.Duration              // the store's (redisstore.WithTimeout)
	event   func(done <-chan struct{}) // a failover, run once beside the faults
	rec     recorder
	stop    atomic.Bool
	maxCost int64
	actual  int64 // a settle's actual cost is 0 to reserved + actual
	resets  int   // the share of operations that reset their key, per mille
	// lateResets: Resets in the second half of each phase only, once
	// the key's long window may be full.
	lateResets bool
	stray      int  // one operation in stray is on any key of the phase, not the replica's (0: none)
	returns    bool // refunds, and settles below their reservation
	settles    int  // how many more operations in 100 reserve and settle at once (at most 38)
	// bursts: the workers make their operations together, in bursts
	// (bursts_test.go), on keys phases of bursts name; the one replica's
	// clock moves by bursts, not with the real time.
	bursts bool
	// steps counts the clock steps so far, which go back by turns from
	// the first (backFirst) or the second: the fault injector's alone.
	steps     int
	backFirst bool
	// stepsBack: every clock step goes back across a boundary, as far
	// as 800 ms before it (and forward again as it ends), none forward
	// first.
	stepsBack bool
	// aimKinds names the kinds of call aimed losses drop the replies
	// to, in turn (aimed_test.go); armed is how many more replies to
	// calls of armedKind they may drop, inFlight how many aimed calls
	// have not returned, aimed how many they aimed at, by kind.
	aimKinds  []Kind
	armedKind atomic.Pointer[Kind]
	armed     atomic.Int64
	inFlight  atomic.Int64
	aimed     map[Kind]*atomic.Int64
}

// key returns one of the keys of the phase the run is in: the one
// replica rp favours for the moment (each replica turns to another key
// every affinity, and so leaves a key, its lease unspent, and comes back
// to it within the window), or, one time in stray, any.
func (r *run) key(rng *rand.Rand, rp *replica) string {
	since := time.Since(r.rec.start)
	j := (int(since/affinity) + rp.id) % r.keys
	if r.stray > 0 && rng.IntN(r.stray) == 0 {
		j = rng.IntN(r.keys)
	}
	return fmt.Sprintf("p%d-k%d", since/r.phase, j)
}

// affinity is how long a replica favours one key.
const affinity = 150 * time.Millisecond

// record runs the workers, the clocks and the faults for r.length, and
// returns the history.
func (r *run) record() *History {
	r.t.Helper()
	r.rec.start = time.Now()
	for _, rp := range r.reps {
		rp.clock.Set(epoch0)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	var feeds []chan *burst
	if r.bursts {
		for range len(r.reps) * r.workers {
			feeds = append(feeds, make(chan *burst, 1))
		}
	}
	wg.Add(4)
	go func() {
		defer wg.Done()
		r.aimLosses(done)
	}()
	go func() {
		defer wg.Done()
		if r.bursts {
			r.burst(feeds)
		} else {
			r.moveClocks(done)
		}
	}()
	go func() {
		defer wg.Done()
		r.inject(done)
	}()
	eventDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(eventDone)
		if r.event != nil {
			r.event(done)
		}
	}()
	var workers sync.WaitGroup
	client := 0
	for _, rp := range r.reps {
		for range r.workers {
			w := &worker{run: r, rp: rp, client: client,
				rng: rand.New(rand.NewPCG(r.seed, uint64(client)))}
			client++
			workers.Add(1)
			go func() {
				defer workers.Done()
				if r.bursts {
					w.burstLoop(feeds[w.client])
				} else {
					w.loop()
				}
			}()
		}
	}
	time.Sleep(r.length) // the recording's length, not a window to cross
	if r.event != nil {
		// Past a failover too, for its aftermath to be read.
		<-eventDone
		time.Sleep(afterEvent)
	}
	r.stop.Store(true)
	workers.Wait()
	close(done)
	wg.Wait()
	if n := r.rec.refused.Load(); n > 0 {
		r.t.Logf("%s seed %d: %d operations failed sending nothing (an open breaker, a dial refused), left out", r.name, r.seed, n)
	}
	if n := r.rec.local.Load(); n > 0 {
		r.t.Logf("%s seed %d: %d answered by the fallback, %d of them with every breaker open (no call made)", r.name, r.seed, n, r.rec.shut.Load())
	}
	if len(r.aimKinds) > 0 {
		aimed := map[Kind]int64{}
		for _, k := range r.aimKinds {
			aimed[k] = r.aimed[k].Load()
		}
		r.t.Logf("%s seed %d: replies lost aimed at %v", r.name, r.seed, aimed)
	}
	if fs := r.rec.failures; len(fs) > 0 {
		first := time.Duration(slices.MinFunc(fs, byCallTime).call)
		last := time.Duration(slices.MaxFunc(fs, byCallTime).call)
		kinds := map[Kind]int{}
		for _, f := range fs {
			kinds[f.kind]++
		}
		r.t.Logf("%s seed %d: operations failed from %v to %v (%v), by kind %v", r.name, r.seed,
			first.Round(time.Millisecond), last.Round(time.Millisecond), (last - first).Round(time.Millisecond), kinds)
	}
	return &History{Name: r.name, Seed: r.seed, Spec: r.spec, Ops: r.rec.ops, Faults: r.rec.faults}
}

// moveClocks moves every replica's clock on by clockSpeed times the real
// time elapsed, every clockTick, until done.
func (r *run) moveClocks(done <-chan struct{}) {
	tick := time.NewTicker(clockTick)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			d := (now.Sub(last) * clockSpeed).Truncate(time.Millisecond)
			last = last.Add(d / clockSpeed)
			for _, rp := range r.reps {
				rp.mu.Lock()
				rp.clock.Advance(d)
				rp.mu.Unlock()
			}
		}
	}
}

// step moves rp's clock by d, counting a step back.
func (rp *replica) step(d time.Duration) {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.advance(d)
}

func (rp *replica) advance(d time.Duration) {
	rp.clock.Advance(d)
	if d < 0 {
		rp.epoch++
	}
}

// stepAcross moves rp's clock across the next boundary of windows of
// windowMs, to past ms after it (back: across the current window's
// start, to past ms before its last millisecond), by maxStep at most,
// and returns the step.
func (rp *replica) stepAcross(windowMs int64, back bool, past int64) time.Duration {
	rp.mu.Lock()
	defer rp.mu.Unlock()
	now := rp.clock.Now().UnixMilli()
	into := now - floorDiv(now, windowMs)*windowMs
	ms := windowMs - into + past
	if back {
		ms = -(into + 1 + past)
	}
	d := time.Duration(ms) * time.Millisecond
	d = max(-maxStep, min(maxStep, d))
	rp.advance(d)
	return d
}

// longCheckTimeout bounds the check of one history of the long run:
// failed Resets, each of which may have wiped the counts at any point of
// a second, make a few of its failovers' histories take 30 to 60 s.
const longCheckTimeout = 5 * time.Minute

// failedDir holds the histories runs found illegal, for TestReplay: not
// committed (.gitignore); a history kept as a fixture is moved up to
// testdata/ with a note.
var failedDir = filepath.Join("testdata", "failed")

// uncheckedDir holds the histories the checker gave no verdict on in
// time: not replayed, not committed.
var uncheckedDir = filepath.Join("testdata", "unchecked")

// check checks h and fails the test unless it is linearizable; see
// verdict.
func check(t testing.TB, h *History) Verdict {
	t.Helper()
	v := verdict(t, h)
	if v.Result != porcupine.Ok {
		t.Errorf("%s seed %d: %s", h.Name, h.Seed, v.Result)
	}
	return v
}

// verdict checks h and logs what it found; when illegal it saves h under
// failedDir for TestReplay, with its HTML view and a text account in a
// temporary directory, and logs where.
func verdict(t testing.TB, h *History) Verdict {
	t.Helper()
	start := time.Now()
	timeout := checkTimeout
	if *long {
		timeout = longCheckTimeout
	}
	v := Check(h, timeout)
	ops, unknown := h.Counts()
	t.Logf("%s seed %d: %d operations (%d failed), %d keys, %d faults: %s in %v; %s",
		h.Name, h.Seed, ops, unknown, len(h.Keys()), len(h.Faults), v.Result, time.Since(start).Round(time.Millisecond), coverageOf(h).String(h.Spec))
	for _, f := range h.Faults {
		t.Logf("  %s at %v for %v: %s", f.Kind, time.Duration(f.Start).Round(time.Millisecond),
			time.Duration(f.End-f.Start).Round(time.Millisecond), f.Detail)
	}
	switch v.Result {
	case porcupine.Unknown:
		file := filepath.Join(uncheckedDir, fmt.Sprintf("%s-seed%d.json", h.Name, h.Seed))
		if err := os.MkdirAll(uncheckedDir, 0o755); err != nil {
			t.Errorf("save: %v", err)
		}
		if err := h.Save(file); err != nil {
			t.Errorf("save: %v", err)
		}
		t.Logf("%s seed %d: no verdict within %v: the history is too large to check; saved as %s", h.Name, h.Seed, timeout, file)
	case porcupine.Illegal:
		h.Want = "Illegal"
		file := filepath.Join(failedDir, fmt.Sprintf("%s-seed%d.json", h.Name, h.Seed))
		if err := os.MkdirAll(failedDir, 0o755); err != nil {
			t.Errorf("save: %v", err)
		}
		if err := h.Save(file); err != nil {
			t.Errorf("save: %v", err)
		}
		small := strings.TrimSuffix(file, ".json") + "-min.json"
		if err := h.Shrink(v).Save(small); err != nil {
			t.Errorf("save: %v", err)
		}
		dir, err := os.MkdirTemp("", "linearize-")
		if err != nil {
			t.Fatal(err)
		}
		html := filepath.Join(dir, h.Name+".html")
		if err := h.Visualize(v, html); err != nil {
			t.Errorf("visualize: %v", err)
		}
		text := h.Explain(v)
		if err := os.WriteFile(filepath.Join(dir, h.Name+".txt"), []byte(text), 0o644); err != nil {
			t.Errorf("explain: %v", err)
		}
		if len(text) > 8000 {
			text = text[:8000] + "\n  ..."
		}
		t.Logf("%s seed %d: not linearizable: keys %v; replay files %s and %s (its first illegal key, cut), view %s\n%s",
			h.Name, h.Seed, v.Illegal, file, small, html, text)
	}
	return v
}

// A worker is one porcupine client: a goroutine of one replica, calling
// one operation at a time.
type worker struct {
	run    *run
	rp     *replica
	client int
	rng    *rand.Rand
	res    *reservation // an admission to settle
	resIn  Input
	held   *heldSlot
}

type heldSlot struct {
	slot    limiter.Slot
	token   int
	local   bool
	slotKey string
}

func (w *worker) loop() {
	for !w.run.stop.Load() {
		w.step(w.run.key(w.rng, w.rp))
		// Pace the load, so that histories stay small enough to check.
		time.Sleep(time.Duration(w.rng.IntN(1500)) * time.Microsecond)
	}
	w.wrapUp()
}

// step makes one operation on key, drawn from the run's mix, and
// settles the worker's reservation when its turn has come.
func (w *worker) step(key string) {
	r := w.run
	if w.rng.IntN(1000) < r.resets && (!r.lateResets || time.Since(r.rec.start)%r.phase >= r.phase/2) {
		w.reset(key)
		return
	}
	switch x := w.rng.IntN(100); {
	case x < 38-r.settles:
		w.decide(Allow, key, false)
	case x < 48-r.settles:
		w.decide(Peek, key, false)
	case x < 58:
		if w.res == nil {
			w.reserve(key)
		}
	case x < 66:
		w.decide(Allow, key, r.returns)
	default:
		w.slot(key)
	}
	if w.res != nil && (r.settles > 0 || w.rng.IntN(3) == 0) {
		w.settle()
	}
}

// wrapUp settles what the worker holds once the recording is over.
func (w *worker) wrapUp() {
	if w.res != nil {
		w.settle()
	}
	if w.held != nil {
		w.slot("")
	}
}

// begin holds the replica's clock still for one operation of kind k on
// key and returns it, called: its instant is the clock's (on Redis's
// clock, the wall clock's, no earlier than Redis's TIME when it runs).
// end records its return and lets the clock move.
func (w *worker) begin(k Kind, key string) Op {
	w.rp.mu.RLock()
	in := Input{Kind: k, Replica: w.rp.id, Key: key, At: w.rp.clock.Now().UnixMilli(), Epoch: w.rp.epoch}
	if w.rp.server {
		in.At, in.Epoch = time.Now().UnixMilli(), 0
	}
	return Op{Client: w.client, In: in, Call: w.run.rec.now()}
}

func (w *worker) end(op *Op) {
	op.Return = w.run.rec.now()
	w.rp.mu.RUnlock()
}

// finish records op, or its failure err, and reports whether it may
// have taken effect: a failure that sent nothing is left out (unsent),
// and so is a failed peek; any other may take effect until unknownSpan
// after its call, or never.
func (w *worker) finish(op Op, err error) bool {
	if err != nil {
		w.run.rec.failed(failureOf(&op, err))
		if unsent(op.In.Kind, err) {
			w.run.rec.refused.Add(1)
			return false
		}
		if op.In.Kind == Peek {
			// Left out too: a peek changes no count, and this one
			// answered nothing, yet each the checker must place (around
			// a failover, 13 failed operations of one key, 2 of them
			// peeks, took 9.9 s to check, 1.7 s without the peeks).
			return false
		}
		within := unknownSpan
		if op.In.Kind == Release {
			within = orphanSpan // the store gives it back in the background
		}
		op.Return, op.Out = op.Call+int64(within), Output{Unknown: true}
	}
	if w.rp.server {
		op.In.AtHi = op.In.At + unknownSpan.Milliseconds()
		if err == nil {
			op.In.AtHi = time.Now().UnixMilli() + 1
		}
	}
	w.run.rec.add(op)
	return true
}

// unsent reports whether an operation of kind k that failed with err
// ran nowhere: refused by its server's open breaker, its connection's
// dial refused at once, or answered by an error Redis gives before it
// runs a command (a cluster down, a server loading its data, a replica
// or a master without its own, a slot mid-migration, a busy script).
// Not so a settle, which may fail on a second call after its first lost
// its reply, nor a release, which the store makes again in the
// background.
func unsent(k Kind, err error) bool {
	if k == Settle || k == Release {
		return false
	}
	var (
		ne     *net.OpError
		reason interface{ Reason() string }
	)
	switch {
	case errors.Is(err, redisstore.ErrCircuitOpen):
		return true
	case errors.As(err, &ne) && ne.Op == "dial" && !errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.As(err, &reason):
		switch reason.Reason() {
		case "cluster_down", "loading", "master_down", "read_only", "try_again", "busy":
			return true
		}
	}
	return false
}

// maybe returns op, failed: it may take effect until within after its
// call, or never.
func maybe(op Op, within time.Duration) Op {
	op.Return, op.Out = op.Call+int64(within), Output{Unknown: true}
	return op
}

func (w *worker) cost() int64 { return 1 + w.rng.Int64N(w.run.maxCost) }

// decide makes an Allow (refund: then refunds it when admitted) or a
// Peek.
func (w *worker) decide(k Kind, key string, refund bool) {
	ctx := context.Background()
	cost := w.cost()
	changes, open := w.rp.shut()
	op := w.begin(k, key)
	op.In.Cost = cost
	var (
		d   limiter.Decision
		err error
	)
	if k == Peek {
		d, err = w.rp.lim.Peek(ctx, key, cost)
	} else {
		d, err = w.rp.lim.Allow(ctx, key, cost)
	}
	w.end(&op)
	op.Out = w.output(d)
	w.finish(op, err)
	w.ghost(op, err, w.rp.stayedShut(changes, open))
	if !refund || err != nil || !d.Allowed {
		return
	}
	back := w.begin(Refund, key)
	back.In.Cost, back.In.Charged, back.In.Local = cost, d.DecidedAt().UnixMilli(), op.Out.Local
	done := w.aim(Refund)
	err = w.rp.lim.Refund(ctx, key, cost, d)
	done()
	w.end(&back)
	w.finish(back, err)
}

// ghost records, beside a decision WithFailLocal's fallback made, the
// Redis call it replaced, which may or may not have been charged; none
// when the store sent nothing (unsent: its breaker stayed open).
func (w *worker) ghost(op Op, err error, unsent bool) {
	if err != nil || !op.Out.Local {
		return
	}
	w.run.rec.local.Add(1)
	if unsent {
		w.run.rec.shut.Add(1)
	}
	if op.In.Kind == Peek || unsent {
		return
	}
	w.run.rec.add(maybe(op, unknownSpan))
}

// output returns what d answers.
func (w *worker) output(d limiter.Decision) Output {
	out := Output{Allowed: d.Allowed, At: d.DecidedAt().UnixMilli(), Local: d.Policy != nil && d.Policy != w.rp.lim.Policy()}
	for i := range d.NumWindows() {
		out.Used = append(out.Used, d.WindowAt(i).Used)
	}
	return out
}

// A reservation is an admission at a reserved cost, to settle later at
// its actual cost (limiter.Limiter.Settle), as the doors' metered limits
// do.
type reservation struct {
	key      string
	reserved int64
	d        limiter.Decision
}

// reserve reserves an admission, to settle later.
func (w *worker) reserve(key string) {
	ctx := context.Background()
	cost := w.cost()
	changes, open := w.rp.shut()
	op := w.begin(Reserve, key)
	op.In.Cost = cost
	d, err := w.rp.lim.Allow(ctx, key, cost)
	w.end(&op)
	if err == nil {
		op.Out = w.output(d)
	}
	w.finish(op, err)
	w.ghost(op, err, w.rp.stayedShut(changes, open))
	if err == nil && d.Allowed {
		w.res, w.resIn = &reservation{key: key, reserved: cost, d: d}, op.In
		w.resIn.Local = op.Out.Local
		w.resIn.Charged = d.DecidedAt().UnixMilli()
	}
}

// settle settles the worker's reservation at an actual cost from 0 to
// its reservation plus run.actual.
func (w *worker) settle() {
	ctx := context.Background()
	res, in := w.res, w.resIn
	w.res = nil
	actual := w.rng.Int64N(res.reserved + w.run.actual + 1)
	if !w.run.returns {
		actual = res.reserved + w.rng.Int64N(w.run.actual+1)
	}
	op := w.begin(Settle, in.Key)
	op.In.Cost, op.In.Actual, op.In.Charged, op.In.Local = res.reserved, actual, in.Charged, in.Local
	done := w.aim(Settle)
	err := w.rp.lim.Settle(ctx, res.key, res.reserved, actual, res.d)
	done()
	w.end(&op)
	w.finish(op, err)
}

// reset resets key.
func (w *worker) reset(key string) {
	op := w.begin(Reset, key)
	done := w.aim(Reset)
	err := w.rp.lim.Reset(context.Background(), key)
	done()
	w.end(&op)
	w.finish(op, err)
}

// slot takes a slot of key when the worker holds none, and otherwise
// gives back the one it holds. A hold whose answer was lost is given back
// by the store in the background: a release that may come at any time.
func (w *worker) slot(key string) {
	ctx := context.Background()
	if h := w.held; h != nil {
		w.held = nil
		req := w.rp.req
		req.Key = h.slotKey
		op := w.begin(Release, h.slotKey)
		op.In.Token, op.In.Local = h.token, h.local
		err := w.rp.slots.ReleaseSlot(ctx, req, h.slot)
		w.end(&op)
		w.finish(op, err)
		return
	}
	req := w.rp.req
	req.Key = key
	changes, open := w.rp.shut()
	op := w.begin(Acquire, key)
	op.In.Token = int(w.run.rec.token.Add(1))
	s, err := w.rp.slots.AcquireSlot(ctx, req)
	w.end(&op)
	op.Out = Output{Allowed: s.Acquired, Used: []int64{s.Held}, Local: s.Max != req.Max}
	if !w.finish(op, err) {
		return // refused, sending nothing
	}
	if err == nil && op.Out.Local {
		w.run.rec.local.Add(1)
	}
	if err == nil && op.Out.Local && w.rp.stayedShut(changes, open) {
		w.run.rec.shut.Add(1)
		return // the fallback took it, and no call to Redis was made
	}
	if err == nil && op.Out.Local {
		// WithFailLocal's fallback took it: the Redis call it replaced
		// may have taken one, which the store gives back by itself.
		w.run.rec.add(maybe(op, unknownSpan))
	}
	if err != nil || op.Out.Local {
		back := maybe(op, orphanSpan)
		back.In.Kind = Release
		w.run.rec.add(back) // given back in the background, or its lease ends
	}
	if err == nil && s.Acquired {
		w.held = &heldSlot{slot: s, token: op.In.Token, local: op.Out.Local, slotKey: key}
	}
}
