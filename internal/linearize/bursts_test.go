package linearize

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// Bursts make operations on one key race: paced workers seldom overlap
// (1.4% of the memory configuration's decisions overlapped another on
// their key), and a store that decided outside its lock would lose an
// update only when two decisions on one key meet. Before each burst the
// fake clock is placed at the burst's instant, and every worker is
// handed the burst, waits for its release, and makes one operation on
// one of the phase's few keys; the next burst starts once all are
// done. A memory decision takes microseconds, so how the workers wait
// decides whether two decisions meet, and no one way works on both an
// idle and a busy machine:
//
//   - Blocked workers woken at once run one after another on the core
//     that woke them, an idle core's thread taking about a millisecond
//     to wake on this VM; they meet when the machine's load preempts a
//     worker amid its decision (decisions overlapping another on their
//     key, memory configuration, -race: 1.5 to 2.1% idle, 8.2% beside
//     two busy loops).
//   - Workers spinning (yielding) to a release a millisecond ahead hold
//     both cores at the release, and decide at once (19.8 to 23.3%
//     idle); under load the preemptions fall on their spinning (0.2 to
//     1.1% beside two busy loops).
//
// So the bursts take turns. A burst's instant is one of the first or
// last burstEdge milliseconds of a window of the shortest rate, or
// between them, a seeded jump of up to a quarter of a window from the
// last, so that windows fill by bursts and are crossed by them.
const (
	burstEdge = 3
	// burstsPerPhase is how many bursts use one phase's keys: about 10
	// windows of the shortest rate, two or three of the longest.
	burstsPerPhase = 120
	// burstLead is how long before its release a burst is handed to the
	// workers: long enough for the scheduler to wake an idle core's
	// thread and give it workers. Two goroutines spinning to a common
	// instant 100 µs ahead overlapped in 1.4% of 2,000 rounds, 1 ms
	// ahead 10%, 1.5 ms ahead 89%; a burst takes long enough itself
	// that 1 ms lets the second core join. It paces the bursts too, so
	// that histories stay small enough to check.
	burstLead = time.Millisecond
)

// A burst is one release of every worker at one instant.
type burst struct {
	phase int
	// spin: the workers spin until at; else they block until start is
	// closed, once all are ready.
	spin  bool
	at    time.Time
	ready sync.WaitGroup
	start chan struct{}
	done  sync.WaitGroup
}

// key returns the key of b's phase a worker makes its operation on:
// one of the run's keys per phase, at random.
func (b *burst) key(w *worker) string {
	return fmt.Sprintf("p%d-k%d", b.phase, w.rng.IntN(w.run.keys))
}

// burstLoop makes one operation in each burst of feed, until it is
// closed.
func (w *worker) burstLoop(feed <-chan *burst) {
	for b := range feed {
		if b.spin {
			for time.Now().Before(b.at) {
				runtime.Gosched()
			}
		} else {
			b.ready.Done()
			<-b.start
		}
		w.step(b.key(w))
		b.done.Done()
	}
	w.wrapUp()
}

// burst releases the workers fed by feeds in bursts, spinning and
// blocked by turns, until the recording stops, placing the clock of the
// run's one replica before each: the replica's clock moves only here,
// and by the clock-step faults.
func (r *run) burst(feeds []chan *burst) {
	rng := rand.New(rand.NewPCG(r.seed, 1<<41))
	rp := r.reps[0]
	for i := 0; !r.stop.Load(); i++ {
		rp.mu.Lock()
		now := rp.clock.Now().UnixMilli()
		rp.advance(time.Duration(nextBurstAt(now, r.spec.shortest(), rng)-now) * time.Millisecond)
		rp.mu.Unlock()
		b := &burst{phase: i / burstsPerPhase, spin: i%2 == 0, at: time.Now().Add(burstLead), start: make(chan struct{})}
		b.ready.Add(len(feeds))
		b.done.Add(len(feeds))
		for _, f := range feeds {
			f <- b
		}
		if !b.spin {
			b.ready.Wait()
			time.Sleep(time.Until(b.at))
			close(b.start)
		}
		b.done.Wait()
	}
	for _, f := range feeds {
		close(f)
	}
}

// nextBurstAt returns the instant of the burst after one at now (ms),
// for windows of windowMs: the next millisecond within burstEdge of a
// window's start or end, else the start of its last burstEdge ms or a
// seeded jump of at most a quarter of a window, whichever comes first.
func nextBurstAt(now, windowMs int64, rng *rand.Rand) int64 {
	into := now - floorDiv(now, windowMs)*windowMs
	if into < burstEdge-1 || into >= windowMs-burstEdge-1 {
		return now + 1
	}
	return min(now-into+windowMs-burstEdge, now+1+rng.Int64N(windowMs/4))
}

func TestNextBurstAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	at := int64(-1)
	for range 1000 {
		next := nextBurstAt(at, 1000, rng)
		if next <= at || next-at > 250 {
			t.Fatalf("after %d: next burst at %d, want within (%d, %d]", at, next, at, at+250)
		}
		// Every window's first and last burstEdge ms has a burst.
		for ms := at + 1; ms < next; ms++ {
			if into := ms - floorDiv(ms, 1000)*1000; into < burstEdge || into >= 1000-burstEdge {
				t.Fatalf("after %d: next burst at %d passes over %d", at, next, ms)
			}
		}
		at = next
	}
}
