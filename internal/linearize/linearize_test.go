package linearize

import (
	"flag"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
)

var (
	long      = flag.Bool("long", false, "the long run (make jepsen): longer histories, and -seeds of them")
	seedFlag  = flag.Uint64("seed", 0, "the first seed (0: one drawn at random for the run, and logged)")
	seedsFlag = flag.Int("seeds", 5, "with -long, how many seeds from -seed")
)

// firstSeed returns the first seed of the run: -seed, or one drawn at
// random once per test process, so that every short run records other
// histories (another interleaving of the faults, clock steps the other
// way first); a failure names its seed in the subtest's name, and
// `-args -seed N` records that seed's histories again.
var firstSeed = sync.OnceValue(func() uint64 {
	if *seedFlag != 0 {
		return *seedFlag
	}
	return 1 + rand.Uint64N(1_000_000)
})

// size returns how many seeds to record and how long each history is:
// one of 1.5 s in the short run.
func size() (seeds int, length time.Duration) {
	if *long {
		return *seedsFlag, 6 * time.Second
	}
	return 1, 1500 * time.Millisecond
}

// A target is one configuration: how to build its replicas and faults.
type target struct {
	name  string
	spec  Spec
	build func(r *run)
}

func targets() []target {
	return []target{
		// In bursts, on two keys at a time, so that decisions race.
		{"memory", shortSpec, func(r *run) {
			r.memory()
			r.faults = []faultKind{clockStep}
			r.bursts, r.keys = true, 2
		}},
		// The long window binds: Resets 1 in 1,000 operations, not 20,
		// which wipe each key every few hundred ms of its clock.
		{"redis", shortSpec, func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil), redisstore.WithOverLimitCache(0))
			r.resets = 1
		}},
		// Every fault, and losses aimed at refunds, settles and Resets.
		{"redis-faults", shortSpec, func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client(), redisstore.WithOverLimitCache(0))
			r.faults = s.faults()
			r.aimAt(s.byClient(), returnsAndResets...)
		}},
		// The cache, against the long window's refusals too: 20 every
		// 4 s, which two seconds fill, then Resets (another replica's
		// leaves the cache's entry, its bound a second).
		{"redis-cache", withStale(cacheSpec), func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client())
			r.faults = s.faults()
			r.lateResets = true
		}},
		// The cache alone, on the shared Redis: no fault but clock
		// steps, four to six a history, each back across a boundary of
		// the short window, as far as 800 ms before it, and forward
		// again (a replica stepped back finds its entry's windows not
		// its own: the cache may refuse from it, never admit; 200 ms
		// back left too little time in the earlier window to catch it
		// admitting in every run). Each replica keeps to the key it
		// favours (no stray operation), and so comes back to a key 300
		// ms after it left it, past its entry's second (1.2 s of its
		// clock), the other two having used it meanwhile, with Resets 40
		// in 1,000 in the second half of each phase, once the long
		// window is full. Nothing fails, so that a history whose cache
		// answers more than it may (a refusal by what it saw over a
		// second before, an admission) has no operation that may or may
		// not have happened, and is decided Illegal in seconds.
		{"redis-cache-steps", withStale(cacheSpec), func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil))
			r.faults = []faultKind{clockStep}
			r.lateResets, r.resets, r.stray, r.stepsBack = true, 40, 0, true
		}},
		// Settles, each right after its reservation, under lost replies
		// only: a settle whose reply is lost is sent once more with its
		// token, and applied once. Losses at random, and aimed at
		// refunds, settles and Resets.
		{"redis-settles", settleSpec, func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client(), redisstore.WithOverLimitCache(0))
			r.faults, r.settles = []faultKind{lostReplies(s.proxies...)}, 38
			r.aimAt(s.byClient(), returnsAndResets...)
			r.length *= 2 // a lost reply must fall on a settle, which two replies in five carry
		}},
		{"redis-serverclock", withServerClock(shortSpec), func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client(), redisstore.WithOverLimitCache(0), redisstore.WithServerClock())
			r.faults = s.faults()
			r.aimAt(s.byClient(), returnsAndResets...)
		}},
		{"redis-faillocal", withDivisor(shortSpec), func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client(), redisstore.WithOverLimitCache(0), redisstore.WithFailLocal(2))
			r.faults = []faultKind{lostReplies(s.proxies...), connReset(s.admin), pause(s.srv), restart(s.srv)}
		}},
		// Leases under faults, with neither a Reset nor a settle past its
		// reservation; then each of those alone, where issue 36 found (a)
		// the replica that settles a key into debt spending its own
		// lease on, (b) units leased before a Reset given back into the
		// new count (fixtures leases-debt.json, leases-reset.json).
		{"redis-leases", withLease(leaseSpec), func(r *run) {
			s := startServer(r.t)
			r.redisReplicas(s.client(), redisstore.WithLeases(0, leaseDivisor), redisstore.WithOverLimitCache(0))
			r.faults = []faultKind{lostReplies(s.proxies...), connReset(s.admin), pause(s.srv), restart(s.srv)}
			r.resets, r.actual = 0, 0
		}},
		{"redis-leases-debt", withLease(leaseSpec), func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil), redisstore.WithLeases(0, leaseDivisor), redisstore.WithOverLimitCache(0))
			r.resets, r.actual, r.stray = 0, leaseSpec.Limits[0]/2, 0
		}},
		{"redis-leases-reset", withLease(leaseSpec), func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil), redisstore.WithLeases(0, leaseDivisor), redisstore.WithOverLimitCache(0))
			// A replica leaves a key it leased and comes back to it,
			// another resetting it meanwhile.
			r.actual, r.stray, r.resets, r.returns = 0, 0, 30, false
			r.length = r.length * 3 / 2 // a key's phase holds a few such returns only
		}},
		// And refunds and settles below their reservation beside the
		// Resets: a return of an admission made before a Reset gives
		// nothing to the count after it (leases-reset-returns.json), nor
		// to the lease the replica took since (leases-refund-to-lease.json).
		{"redis-leases-reset-returns", withLease(leaseSpec), func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil), redisstore.WithLeases(0, leaseDivisor), redisstore.WithOverLimitCache(0))
			r.actual, r.stray, r.resets = 0, 0, 30
			r.length = r.length * 3 / 2
		}},
		// The same on Redis's clock, where a lease's decisions are dated
		// by the replica's estimate of TIME, never after it (leaseEarly):
		// one made before another replica's Reset is dated at or before
		// its mark, and its return gives nothing.
		{"redis-leases-serverclock", withServerClock(withLease(leaseSpec)), func(r *run) {
			redistest.Shared(r.t)
			r.redisReplicas(single(redistest.SharedAddr, nil), redisstore.WithLeases(0, leaseDivisor), redisstore.WithOverLimitCache(0), redisstore.WithServerClock())
			r.actual, r.stray, r.resets = 0, 0, 30
			r.length = r.length * 3 / 2
		}},
		// WithReplicaAcks on a master with one replica: the replica
		// paused past the ack timeout fails the rounds, never an answer.
		{"redis-acks", shortSpec, func(r *run) {
			s := startServer(r.t)
			replica := redistest.StartServer(r.t, "--replicaof", "127.0.0.1", strconv.Itoa(s.srv.Port()))
			if !await(func() bool { return strings.Contains(replication(s.srv.Addr(), "slave0"), "state=online") }) {
				r.t.Fatalf("replica %s not in sync", replica.Addr())
			}
			redistest.AwaitStreaming(r.t, s.srv.Addr(), 1)
			r.redisReplicas(s.client(), redisstore.WithOverLimitCache(0),
				redisstore.WithReplicaAcks(1, ackTimeout), redisstore.WithTimeout(failoverTimeout))
			r.timeout = failoverTimeout
			r.faults = []faultKind{lostReplies(s.proxies...), connReset(s.admin), pause(s.srv, replica), clockStep}
		}},
		{"cluster", shortSpec, func(r *run) {
			cl := startCluster(r.t)
			r.redisReplicas(cl.client(), redisstore.WithOverLimitCache(0))
			r.faults = cl.faults()
			r.aimAt(cl.proxies, returnsAndResets...)
		}},
	}
}

// returnsAndResets are the calls aimed losses drop the replies to, in
// turn.
var returnsAndResets = []Kind{Reset, Refund, Settle}

func withStale(sp Spec) Spec       { sp.Stale = maxLocalAge; return sp }
func withServerClock(sp Spec) Spec { sp.ServerClock = true; return sp }
func withDivisor(sp Spec) Spec     { sp.Divisor = 2; return sp }

// withLease sets the most a replica holds leased: the cap, 24/4, plus
// the largest cost less one.
func withLease(sp Spec) Spec { sp.Lease = sp.Limits[0]/leaseDivisor + 3 - 1; return sp }

// TestLinearizable records, for every configuration and seed, a history
// of concurrent operations from several replicas under its faults, and
// checks it against the model (Model). A history no order explains is
// saved under testdata/ for TestReplay, and fails the test.
func TestLinearizable(t *testing.T) {
	seeds, length := size()
	t.Logf("seeds %d to %d (again: -args -seed %d)", firstSeed(), firstSeed()+uint64(seeds)-1, firstSeed())
	for _, tg := range targets() {
		for i := range seeds {
			seed := firstSeed() + uint64(i)
			// A subtest per seed: its servers stop when it ends.
			t.Run(tg.name+"/seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
				r := newRun(t, tg.name, seed, tg.spec, length)
				tg.build(r)
				h := r.record()
				check(t, h)
				r.boundFailures(h)
				if short := floors[tg.name].short(coverageOf(h), h.Spec); len(short) > 0 {
					t.Errorf("%s seed %d: too little covered: %s", h.Name, h.Seed, strings.Join(short, "; "))
				}
			})
		}
	}
}

// TestReplay checks every history saved under testdata/ again, and
// wants the verdict it was saved with: a fixture of a bug the checker
// must catch (testdata/*.json) is caught, and a history a run found
// illegal (testdata/failed/*-min.json, not committed) stays so.
func TestReplay(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Of a run's illegal histories, the cut ones: the whole ones are
	// for people to read, and take seconds more to check again.
	failed, err := filepath.Glob(filepath.Join(failedDir, "*-min.json"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, failed...)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			h, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			v := Check(h, checkTimeout)
			if string(v.Result) != h.Want {
				t.Fatalf("%s: got %s, want %s (%s)\n%s", f, v.Result, h.Want, h.Note, h.Explain(v))
			}
		})
	}
}
