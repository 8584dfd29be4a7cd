package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestClusterBatchRoutesResults: on a Cluster, concurrent decisions over
// keys of every master, a different number per key, are regrouped by
// slot inside a round; each decision still gets its own answer (a key's
// decisions see each of its counts once, which an answer handed to
// another key's decision would break), decisions of one key share script calls, and
// Redis holds exactly the decisions made.
func TestClusterBatchRoutesResults(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	const limit, keys = 1000, 24
	per := func(i int) int { return 5 + i } // decisions for key i
	total := 0
	p := limiter.MustPolicy("routes", limiter.PerHour(limit))
	s := newStore(t, cl.Client(t), WithOverLimitCache(0))
	if !isClusterRouter(s) {
		t.Fatal("no slot batcher on a Cluster client")
	}
	l := newLimiter(t, p, s, limitertest.New(t0))
	var (
		mu        sync.Mutex
		remaining = map[string][]int64{}
		wg        sync.WaitGroup
	)
	start := make(chan struct{})
	decide := func(key string) {
		defer wg.Done()
		<-start
		d, err := l.Allow(ctx, key, 1)
		if err != nil || !d.Allowed {
			t.Errorf("%s: %+v, %v; want admitted", key, d, err)
			return
		}
		mu.Lock()
		remaining[key] = append(remaining[key], d.Remaining)
		mu.Unlock()
	}
	for i := range keys {
		for range per(i) {
			total++
			wg.Add(1)
			go decide(fmt.Sprintf("key-%d", i))
		}
	}
	close(start)
	wg.Wait()

	owners := map[string]bool{}
	for i := range keys {
		key := fmt.Sprintf("key-%d", i)
		got := remaining[key]
		slices.Sort(got)
		for j, r := range got {
			if want := int64(limit - per(i) + j); r != want {
				t.Fatalf("%s: remaining %v, want each of %d..%d once", key, got, limit-per(i), limit-1)
			}
		}
		k := keyOf(s, key, p, 0, t0)
		if n, err := admin.Get(ctx, k).Int64(); err != nil || n != int64(per(i)) {
			t.Fatalf("%s: Redis holds %d (%v), want %d", key, n, err, per(i))
		}
		owner, err := admin.MasterForKey(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		owners[owner.Options().Addr] = true
	}
	if len(owners) != 3 {
		t.Fatalf("%d keys on %d masters, want 3: the test proved less", keys, len(owners))
	}
	st := s.Stats()
	if st.Decisions != uint64(total) || st.RoundTrips >= st.Decisions {
		t.Fatalf("%d decisions in %d script calls, want %d in fewer", st.Decisions, st.RoundTrips, total)
	}
	t.Logf("%d decisions in %d script calls", st.Decisions, st.RoundTrips)
}

// TestCorruptKeyAloneInClusterBatch: on a Cluster, a corrupt count fails
// none of the sound decisions of its round, neither those of another key
// sharing its slot (hence its script call) nor those of other slots.
func TestCorruptKeyAloneInClusterBatch(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("corruptslot", limiter.PerMinute(3))
	s := newStore(t, cl.Client(t))
	bad := ""
	for i := 0; bad == ""; i++ {
		if k := fmt.Sprintf("bad-%d", i); requestSlot(k) == requestSlot("a") {
			bad = k
		}
	}
	if requestSlot("b") == requestSlot("a") {
		t.Fatal("a and b share a slot: the test would prove less")
	}
	writeCount(t, admin, appClock, keyOf(s, bad, p, 0, t0), "1.0")
	// Loaded everywhere, so that no call is sent again after NOSCRIPT.
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ScriptLoad(ctx, takeSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
	var reqs []limiter.Request
	for _, k := range []string{"a", bad, "b", "a", bad, "a", "a"} {
		reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
	}
	calls := sendTogether(t, s, reqs)
	want := []bool{true, false, true, true, false, true, false}
	for i, c := range calls {
		if c.err != nil || c.res.allowed != want[i] {
			t.Errorf("request %d (%s): allowed=%v, %v; want allowed=%v, no error",
				i, c.req.Key, c.res.allowed, c.err, want[i])
		}
	}
	for k, n := range map[string]string{"a": "3", "b": "1", bad: "1.0"} {
		if got, err := admin.Get(ctx, keyOf(s, k, p, 0, t0)).Result(); err != nil || got != n {
			t.Errorf("key %s holds %q, %v; want %s", k, got, err, n)
		}
	}
	if st := s.Stats(); st.RoundTrips != 2 {
		t.Errorf("%d script calls for two slots, want 2", st.RoundTrips)
	}
}

// keysOnNode returns n client keys in distinct slots that the master at
// addr serves, none in a slot of avoid.
func keysOnNode(t *testing.T, cl *redistest.Cluster, c *redis.ClusterClient, addr string, n int, avoid ...string) []string {
	t.Helper()
	ctx := context.Background()
	used := map[uint16]bool{}
	for _, k := range avoid {
		used[requestSlot(k)] = true
	}
	var keys []string
	for i := 0; len(keys) < n; i++ {
		k := fmt.Sprintf("node-%d", i)
		if used[requestSlot(k)] {
			continue
		}
		m, err := c.MasterForKey(ctx, tag(k))
		if err != nil {
			t.Fatal(err)
		}
		if m.Options().Addr == addr {
			used[requestSlot(k)] = true
			keys = append(keys, k)
		}
	}
	return keys
}

// TestClusterNodeCall: a round's decisions over many slots go out as one
// script call per node (slots served by one master share it), each
// decision still gets its own answer and is charged once, and a corrupt
// count in one slot refuses only its own key's decisions in the shared
// call.
func TestClusterNodeCall(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("nodecall", limiter.PerMinute(3), limiter.PerHour(100))
	s := newStore(t, cl.Client(t), WithOverLimitCache(0))
	var reqs []limiter.Request
	var keys []string
	for _, n := range cl.Nodes {
		keys = append(keys, keysOnNode(t, cl, admin, n.Addr(), 3)...)
	}
	bad := keys[1] // shares its node with keys[0] and keys[2]
	writeCount(t, admin, appClock, keyOf(s, bad, p, 1, t0), "7.5")
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ScriptLoad(ctx, takeSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
	// Every key four times, interleaved: the fourth is over 3 per minute.
	for range 4 {
		for _, k := range keys {
			reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
		}
	}
	calls := sendTogether(t, s, reqs)
	seen := map[string]int{}
	for i, c := range calls {
		k := c.req.Key
		want := k != bad && seen[k] < 3
		seen[k]++
		if c.err != nil || c.res.allowed != want || c.res.elsewhere {
			t.Errorf("request %d (%s, its %d.): %+v, %v; want allowed=%v, no error", i, k, seen[k], c.res, c.err, want)
		}
		if want && c.res.counts[0] != int64(seen[k]-1) {
			t.Errorf("request %d (%s): found %d in the minute, want %d", i, k, c.res.counts[0], seen[k]-1)
		}
	}
	for _, k := range keys {
		want := "3"
		if k == bad {
			continue
		}
		if got, err := admin.Get(ctx, keyOf(s, k, p, 0, t0)).Result(); err != nil || got != want {
			t.Errorf("key %s holds %q, %v in the minute; want %s", k, got, err, want)
		}
	}
	if got, err := admin.Get(ctx, keyOf(s, bad, p, 1, t0)).Result(); err != nil || got != "7.5" {
		t.Errorf("corrupt key holds %q, %v; want it untouched", got, err)
	}
	if st := s.Stats(); st.RoundTrips != uint64(len(cl.Nodes)) {
		t.Errorf("%d script calls for %d slots on %d masters, want one per master", st.RoundTrips, len(keys), len(cl.Nodes))
	}
}

// TestClusterNodeCallSlotMoved: a client whose view of the Cluster is
// stale sends a slot's decision in a node call to its old master. The
// script finds its keys gone and charges it nothing there; it is sent
// again on its own and follows the redirect (MOVED once the move is
// done, ASK mid-migration), so it is charged exactly once, where the
// slot now lives, and the decisions beside it in the node call are
// charged once too.
func TestClusterNodeCallSlotMoved(t *testing.T) {
	type move struct {
		name   string
		finish bool // SETSLOT NODE done: MOVED; else ASK
	}
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, tc := range []move{{"moved", true}, {"ask", false}} {
			t.Run(clock.String()+"/"+tc.name, func(t *testing.T) { testNodeCallSlotMoved(t, clock, tc.finish) })
		}
	}
}

// testNodeCallSlotMoved is one row of TestClusterNodeCallSlotMoved: the
// slot moved (finished) or mid-migration.
func testNodeCallSlotMoved(t *testing.T, clock clockSource, finished bool) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("moved", limiter.PerMinute(10))
	s := newStore(t, cl.Client(t), WithOverLimitCache(0), withClockSource(clock))
	if clock == serverClock {
		awaitServerWindow(t, admin, time.Minute)
	}
	keys := keysOnNode(t, cl, admin, cl.Nodes[0].Addr(), 3)
	// The store learns the slots: one decision per key.
	for _, k := range keys {
		if d, err := s.Take(ctx, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1}); err != nil || !d.Allowed {
			t.Fatalf("warm-up %s: %+v, %v", k, d, err)
		}
	}
	// Loaded everywhere, so that no call is sent again after NOSCRIPT.
	if err := admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ScriptLoad(ctx, takeSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
	slot := int(requestSlot(keys[0]))
	finish := cl.BeginMove(t, slot, 1)
	if finished {
		finish()
	} else {
		t.Cleanup(finish)
	}
	before := s.Stats()
	var reqs []limiter.Request
	for range 2 {
		for _, k := range keys {
			reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
		}
	}
	calls := sendTogether(t, s, reqs)
	for i, c := range calls {
		if c.err != nil || !c.res.allowed || c.res.elsewhere {
			t.Fatalf("request %d (%s): %+v, %v; want admitted", i, c.req.Key, c.res, c.err)
		}
	}
	for _, k := range keys {
		v, err := storedCount(ctx, admin, keyOf(s, k, p, 0, t0), clock)
		if got, _ := strconv.ParseInt(v, 10, 64); err != nil || got != 3 {
			t.Errorf("key %s holds %d, %v; want 3: charged once per decision", k, got, err)
		}
	}
	// ASKING: mid-migration the new master serves the slot's keys
	// only to a client that says it was sent there.
	conn := redistest.Client(t, cl.Nodes[1].Addr()).Conn()
	defer conn.Close()
	moved := keyOf(s, keys[0], p, 0, t0)
	if err := conn.Do(ctx, "ASKING").Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Exists(ctx, moved).Result(); err != nil || n != 1 {
		t.Errorf("moved key on its new master: EXISTS %d, %v; want 1", n, err)
	}
	// One node call, then the moved slot's call (its redirect is
	// go-redis's and not counted).
	after := s.Stats()
	if d := after.RoundTrips - before.RoundTrips; d != 2 {
		t.Errorf("%d script calls, want 2: the node call and the moved slot's own", d)
	}
	if d := after.Resent - before.Resent; d != 2 {
		t.Errorf("%d decisions sent again, want the moved key's 2", d)
	}
}

// TestClusterNodeCallMidMigration: while a slot migrates, a node call to
// its source decides exactly the requests whose keys the source still
// holds, and hands back, charged nothing, those whose keys have left in
// whole or in part; they are then decided where their keys are. Neither a
// key still on the source decided from empty counts on the target (what a
// node call run under the target's ASKING would do) nor a request charged
// without an answer.
func TestClusterNodeCallMidMigration(t *testing.T) {
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			ctx := context.Background()
			cl := redistest.SharedCluster(t)
			admin := cl.Client(t)
			if clock == serverClock {
				awaitServerWindow(t, admin, time.Minute)
			}
			// Two windows: a request's keys can be split by a migration.
			p := limiter.MustPolicy("midmigration", limiter.PerMinute(10), limiter.PerHour(100))
			// One window for the new key: its call, declaring one key, is
			// served by the target under ASK (a multi-key one would get
			// TRYAGAIN until the migration ends).
			one := limiter.MustPolicy("midmigration-one", limiter.PerMinute(10))
			s := newStore(t, cl.Client(t), WithOverLimitCache(0), withClockSource(clock))
			src := cl.Nodes[0].Addr()
			keys := keysOnNode(t, cl, admin, src, 2)
			y, q := keys[0], keys[1]
			slot := requestSlot(q)
			// p: a new client key in q's slot; x: an old one in another slot
			// of the source, whose keys the migration will split.
			var pk, x string
			for i := 0; pk == "" || x == ""; i++ {
				k := fmt.Sprintf("mid-%d", i)
				switch sl := requestSlot(k); {
				case sl == slot && pk == "":
					pk = k
				case x == "" && sl != slot && sl != requestSlot(y):
					if m, err := admin.MasterForKey(ctx, tag(k)); err == nil && m.Options().Addr == src {
						x = k
					}
				}
			}
			take := func(k string, n int) {
				t.Helper()
				for range n {
					if d, err := s.Take(ctx, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1}); err != nil || !d.Allowed {
						t.Fatalf("before the migration, %s: %+v, %v", k, d, err)
					}
				}
			}
			take(q, 9) // one left in the minute
			take(x, 1)
			take(y, 1)
			if err := admin.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
				return n.ScriptLoad(ctx, takeSource).Err()
			}); err != nil {
				t.Fatal(err)
			}
			finishQ := cl.MarkMigrating(t, int(slot), 1)
			xSlot := int(requestSlot(x))
			finishX := cl.MarkMigrating(t, xSlot, 2)
			// x's hour leaves; its minute, the first key, stays: split
			// (TRYAGAIN) until the minute follows a moment later. A probe
			// of the first key alone would pass, and the script then fail
			// on the hour's after charging the requests before it.
			x0, x1 := keyOf(s, x, p, 0, t0), keyOf(s, x, p, 1, t0)
			srcc := redistest.Client(t, src)
			if err := srcc.Do(ctx, "MIGRATE", "127.0.0.1", cl.Nodes[2].Port(), "", 0, 5000, "KEYS", x1).Err(); err != nil {
				t.Fatal(err)
			}
			tryAgain := redistest.ErrorCount(t, src, "TRYAGAIN")
			moved := make(chan struct{})
			go func() { // once the source has refused x's split call
				defer close(moved)
				awaitErrors(t, src, "TRYAGAIN", tryAgain)
				_ = srcc.Do(ctx, "MIGRATE", "127.0.0.1", cl.Nodes[2].Port(), "", 0, 5000, "KEYS", x0).Err()
			}()
			before := s.Stats()
			reqs := []limiter.Request{}
			for _, k := range []string{pk, q, q, x, y, q} {
				pol := p
				if k == pk {
					pol = one
				}
				reqs = append(reqs, limiter.Request{Key: k, Policy: pol, Now: t0, Cost: 1})
			}
			calls := sendTogether(t, s, reqs)
			<-moved
			want := []bool{true, true, false, true, true, false}
			for i, c := range calls {
				if c.err != nil || c.res.allowed != want[i] {
					t.Errorf("request %d (%s): %+v, %v; want allowed=%v", i, c.req.Key, c.res, c.err, want[i])
				}
			}
			if d := s.Stats().Resent - before.Resent; d != 2 {
				t.Errorf("%d decisions sent again, want 2 (%s, gone from the source; %s, split)", d, pk, x)
			}
			finishQ()
			finishX()
			count := func(key string) int64 {
				t.Helper()
				v, err := storedCount(ctx, admin, key, clock)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				return n
			}
			if got := count(keyOf(s, pk, one, 0, t0)); got != 1 {
				t.Errorf("%s: %d, want 1", pk, got)
			}
			for k, n := range map[string]int64{q: 10, x: 2, y: 2} {
				for w := range 2 {
					if got := count(keyOf(s, k, p, w, t0)); got != n {
						t.Errorf("%s, window %d: %d, want %d (each admission charged once, where the keys were)", k, w, got, n)
					}
				}
			}
		})
	}
}

// TestClusterReadOnlyClientSlotCalls: a Cluster client that reads from
// replicas (ReadOnly, RouteByLatency, RouteRandomly) opens its
// connections with READONLY, on which a demoted master would answer a
// node call's probe instead of redirecting it; its batches make one call
// per client key, which go-redis routes, each through its master's
// breaker: Health names the masters.
func TestClusterReadOnlyClientSlotCalls(t *testing.T) {
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("readonly", limiter.PerMinute(10))
	var keys []string
	for _, n := range cl.Nodes {
		keys = append(keys, keysOnNode(t, cl, admin, n.Addr(), 2)...)
	}
	// Loaded everywhere, so that no call is sent again after NOSCRIPT.
	if err := admin.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		return n.ScriptLoad(ctx, takeSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
	for name, set := range map[string]func(*redis.ClusterOptions){
		"read_only":        func(o *redis.ClusterOptions) { o.ReadOnly = true },
		"route_by_latency": func(o *redis.ClusterOptions) { o.RouteByLatency = true },
		"route_randomly":   func(o *redis.ClusterOptions) { o.RouteRandomly = true },
	} {
		t.Run(name, func(t *testing.T) {
			s := newStore(t, cl.Client(t, set), WithPrefix(testPrefix(t)))
			if !s.declared.Load() {
				t.Fatal("node calls on a client that reads from replicas")
			}
			var reqs []limiter.Request
			for _, k := range keys {
				reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
			}
			for i, c := range sendTogether(t, s, reqs) {
				if c.err != nil || !c.res.allowed {
					t.Errorf("request %d (%s): %+v, %v; want admitted", i, c.req.Key, c.res, c.err)
				}
			}
			if st := s.Stats(); st.RoundTrips != uint64(len(keys)) {
				t.Errorf("%d script calls for %d keys on %d masters, want one per key", st.RoundTrips, len(keys), len(cl.Nodes))
			}
			masters := map[string]Health{}
			for _, n := range cl.Nodes {
				masters[n.Addr()] = Healthy
			}
			if h := s.Health(); !maps.Equal(h, masters) {
				t.Errorf("health %v, want the masters' %v", h, masters)
			}
		})
	}
}

// TestClusterNoSlotMap: a Cluster client that has reached no node has no
// slot map, so no master for any key: each decision fails within the
// timeout with go-redis's error, named, and Health names no server, as
// none was sent to.
func TestClusterNoSlotMap(t *testing.T) {
	const timeout = 100 * time.Millisecond
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}, ContextTimeoutEnabled: true})
	defer c.Close()
	s := newStore(t, c, WithTimeout(timeout))
	p := limiter.MustPolicy("noslotmap", limiter.PerMinute(5))
	for i := range 3 {
		start := time.Now()
		_, err := s.Take(context.Background(), limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1})
		if took := time.Since(start); !errors.Is(err, ErrUnavailable) || reasonOf(err) != "timeout" || took > timeout+slack {
			t.Errorf("decision %d: %v (reason %q) in %v; want ErrUnavailable, timeout, within %v", i, err, reasonOf(err), took, timeout+slack)
		}
	}
	if h := s.Health(); len(h) != 0 {
		t.Errorf("health %v, want no server", h)
	}
}
