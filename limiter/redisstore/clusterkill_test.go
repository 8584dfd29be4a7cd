package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestClusterMasterKilled: on three masters with a replica each, kill -9
// of one master under load from four replicas of the application fails
// at most 1% of the decisions for keys on the two surviving masters, none
// of them by an open breaker (each master has its own breaker, every call
// counts for a master, CLUSTERDOWN opens none, and a round delivers each
// master's answers as they come); no window admits more than its limit,
// and once the replica is promoted every window is exact again. With
// cluster-require-full-coverage no the cluster keeps serving the
// surviving masters' slots; with yes (Redis's default) every node
// answers CLUSTERDOWN from the master's failure to the promotion: Redis's
// own answer, not counted. Before, a dead master opened the one breaker
// of the store, and 16% of the survivors' decisions failed; then, under
// full coverage, CLUSTERDOWN opened the one breaker of the calls go-redis
// routed by slot, and 20 to 32% failed.
func TestClusterMasterKilled(t *testing.T) {
	for _, tc := range []struct {
		name              string
		replicas, callers int // callers per replica
		oneKeyEach        bool
		fullCoverage      string // cluster-require-full-coverage
		opts              []Option
	}{
		// Many keys per caller: every round mixes every master's keys.
		{"mixed_keys", 4, 8, false, "no", nil},
		// A key per caller, two of six on the dead master: small rounds,
		// some with only the dead master's keys (which opened the one
		// breaker of the store before).
		{"one_key_per_caller", 1, 6, true, "no", nil},
		// Redis's default: from the master's failure until the promotion
		// every node answers CLUSTERDOWN for every slot, and the node
		// calls' requests are sent again, a call per key, which go-redis
		// routes (through one breaker for all slots before).
		{"full_coverage", 4, 8, false, "yes", nil},
		// Calls per key only: CLUSTERDOWN is each call's answer, which
		// opened the breakers of the surviving masters when it counted as
		// an outage.
		{"full_coverage_declared_keys", 4, 8, false, "yes", []Option{WithDeclaredKeys()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			masterKilled(t, tc.replicas, tc.callers, tc.oneKeyEach, tc.fullCoverage, tc.opts...)
		})
	}
}

// failed tallies the failures of one reason: how many, the first's
// text, and when the first and the last came after the kill.
type failed struct {
	n           int
	example     string
	first, last time.Duration
}

func masterKilled(t *testing.T, replicas, callers int, oneKeyEach bool, fullCoverage string, opts ...Option) {
	const limit = 40
	cl := redistest.StartClusterWithReplicas(t, 1000, "--cluster-require-full-coverage", fullCoverage)
	prefix := testPrefix(t)
	p := limiter.MustPolicy("kill", limiter.PerSecond(limit))
	var (
		keys   []string
		victim string
		onDead = map[string]bool{}
	)
	probe := cl.Client(t)
	for i := 0; len(keys) < 48; i++ {
		k := fmt.Sprintf("k%d", i)
		n, err := probe.MasterForKey(context.Background(), tag(k))
		if err != nil {
			t.Fatal(err)
		}
		if victim == "" {
			victim = n.Options().Addr
		}
		onDead[k] = n.Options().Addr == victim
		keys = append(keys, k)
	}
	if oneKeyEach { // two callers on the dead master's keys, the rest elsewhere
		var dead, alive []string
		for _, k := range keys {
			if onDead[k] {
				dead = append(dead, k)
			} else {
				alive = append(alive, k)
			}
		}
		keys = append(dead[:2], alive[:callers-2]...)
	}
	// The servers HealthChanged events name: every one a node's address.
	var (
		evMu   sync.Mutex
		health = map[string]bool{}
	)
	observe := func(e Event) {
		if e.Kind == HealthChanged {
			evMu.Lock()
			health[e.Node] = true
			evMu.Unlock()
		}
	}
	var limiters []*limiter.Limiter
	for range replicas {
		s, err := New(cl.Client(t), append([]Option{WithPrefix(prefix), WithOverLimitCache(0), WithObserver(observe)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		l, err := limiter.New(p, limiter.WithStore(s))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		limiters = append(limiters, l)
	}
	type tally struct{ admitted, attempts, failed int }
	var (
		mu            sync.Mutex
		windows       = map[string]map[int64]*tally{} // key → window id → tally
		live, liveErr int
		failures      = map[string]*failed{} // the survivors' failures by reason
		killed        atomic.Int64           // Unix ns of the kill
		recovered     atomic.Int64           // Unix ns of the first decision on the dead master's keys after it
		stop          atomic.Bool
		wg            sync.WaitGroup
		// Closed when every caller has had warmDecisions decided, when
		// the dead master's keys are decided again, and when a decision
		// falls in the window after the two whole windows after that.
		warm       = make(chan struct{})
		back       = make(chan struct{})
		twoWindows = make(chan struct{})
		cold       atomic.Int64
		wholeFrom  int64 // the first whole window after recovery
		sawWindows bool
	)
	const warmDecisions = 20
	cold.Store(int64(len(limiters) * callers))
	for r, l := range limiters {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				decided := 0
				for i := r*callers + c; !stop.Load(); i++ {
					k := keys[i%len(keys)]
					if oneKeyEach {
						k = keys[c]
					}
					began := time.Now().UnixNano()
					d, err := l.Allow(context.Background(), k, 1)
					now := time.Now()
					at := now
					if err == nil {
						at = d.DecidedAt()
					}
					id := at.UnixMilli() / 1000
					if err == nil {
						if decided++; decided == warmDecisions && cold.Add(-1) == 0 {
							close(warm)
						}
					}
					mu.Lock()
					if windows[k] == nil {
						windows[k] = map[int64]*tally{}
					}
					w := windows[k][id]
					if w == nil {
						w = &tally{}
						windows[k][id] = w
					}
					w.attempts++
					switch {
					case err != nil:
						w.failed++
					case d.Allowed:
						w.admitted++
					}
					after := killed.Load() != 0 && began > killed.Load()
					if after && onDead[k] && err == nil && recovered.Load() == 0 {
						recovered.Store(now.UnixNano())
						wholeFrom = now.UnixMilli()/1000 + 1
						close(back)
					}
					if recovered.Load() != 0 && id >= wholeFrom+2 && !sawWindows {
						sawWindows = true
						close(twoWindows)
					}
					if after && !onDead[k] && recovered.Load() == 0 {
						live++
						if err != nil {
							r := reasonOf(err)
							if r == "" {
								r = err.Error()
							}
							f := failures[r]
							if f == nil {
								f = &failed{example: err.Error(), first: now.Sub(time.Unix(0, killed.Load()))}
								failures[r] = f
							}
							f.n++
							f.last = now.Sub(time.Unix(0, killed.Load()))
							if r != "cluster_down" {
								liveErr++
							}
						}
					}
					mu.Unlock()
				}
			}()
		}
	}
	// Load before the kill: every caller has been decided a few times, so
	// every replica's client knows the slots and has dialled the masters.
	select {
	case <-warm:
	case <-time.After(20 * time.Second):
		stop.Store(true)
		wg.Wait()
		t.Fatalf("%d of %d callers not decided %d times in 20 s before the kill", cold.Load(), len(limiters)*callers, warmDecisions)
	}
	for _, n := range cl.Nodes {
		if n.Addr() == victim {
			killed.Store(time.Now().UnixNano())
			n.Kill()
		}
	}
	select {
	case <-back:
		// Two whole windows after recovery: they are over once a
		// decision falls in the window after them.
		select {
		case <-twoWindows:
		case <-time.After(10 * time.Second):
			t.Errorf("no decision in the second window after recovery within 10 s")
		}
	case <-time.After(20 * time.Second):
	}
	rec := recovered.Load()
	stop.Store(true)
	wg.Wait()
	if rec == 0 {
		var nodes string
		for _, n := range cl.Nodes {
			if n.Addr() != victim {
				nodes, _ = redistest.Client(t, n.Addr()).ClusterNodes(context.Background()).Result()
				break
			}
		}
		t.Fatalf("the dead master's keys were never decided again in 20 s; cluster nodes:\n%s", nodes)
	}
	outage := time.Duration(rec - killed.Load())
	t.Logf("dead master %s; its keys decided again %v after the kill; surviving masters' keys in that time: %d decisions, %d failed by the store (%.2f%%)",
		victim, outage, live, liveErr, 100*float64(liveErr)/float64(max(1, live)))
	for r, f := range failures {
		t.Logf("  %s: %d from +%v to +%v, e.g. %q", r, f.n, f.first.Round(time.Millisecond), f.last.Round(time.Millisecond), f.example)
	}
	if live == 0 || liveErr*100 > live {
		t.Errorf("surviving masters' keys: %d of %d decisions failed, want at most 1%%", liveErr, live)
	}
	if f := failures["circuit_open"]; f != nil {
		t.Errorf("surviving masters' keys: %d decisions failed by an open breaker, want none: %s", f.n, f.example)
	}
	evMu.Lock()
	for node := range health {
		if !slices.Contains(cl.Addrs(), node) {
			t.Errorf("a HealthChanged event names %q, not a server", node)
		}
	}
	if !health[victim] {
		t.Errorf("no HealthChanged event for the dead master %s: %v", victim, health)
	}
	evMu.Unlock()
	exactFrom := time.Unix(0, rec).UnixMilli()/1000 + 1 // the first whole window after recovery
	checked := 0
	for k, ws := range windows {
		for id, w := range ws {
			if w.admitted > limit {
				t.Errorf("%s (dead master's: %v), window %d: admitted %d, over the limit %d", k, onDead[k], id, w.admitted, limit)
			}
			if id >= exactFrom && w.failed == 0 && w.attempts > limit && stop.Load() {
				if _, last := ws[id+1]; !last {
					continue // the window the load stopped in
				}
				checked++
				if w.admitted != limit {
					t.Errorf("%s, window %d after recovery: admitted %d of %d attempts, want exactly %d", k, id, w.admitted, w.attempts, limit)
				}
			}
		}
	}
	if checked == 0 {
		t.Error("no whole window after recovery was checked: the test proved less")
	}
}
