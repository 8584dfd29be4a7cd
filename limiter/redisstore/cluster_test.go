package redisstore

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestCluster runs the store on a three-master Redis Cluster started from
// the redis-server binary, on the Cluster client's path (Batch per
// master): layered windows of one client share a slot (no CROSSSLOT),
// clients spread over every master, four replicas share one limit, and a
// slot moved to another master mid-run (MOVED) keeps its counts.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	p := limiter.MustPolicy("cluster", limiter.PerMinute(12), limiter.PerSecond(5))
	prefix := testPrefix(t)
	clk := limitertest.New(t0)
	var ls []*limiter.Limiter
	var stores []*Store
	for range 4 {
		s, err := New(cl.Client(t), WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
		ls = append(ls, newLimiter(t, p, s, clk))
	}
	if stores[0].path != pathBatch || !isClusterRouter(stores[0]) {
		t.Fatalf("path %v on a Cluster client, want batch per master", stores[0].path)
	}
	admin := cl.Client(t)

	t.Run("layered_windows_over_all_masters", func(t *testing.T) {
		owners := map[string]int{}
		for i := range 30 {
			key := "user-" + strconv.Itoa(i)
			got := 0
			for range 8 {
				d, err := ls[i%4].Allow(ctx, key, 1)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if d.Allowed {
					got++
				}
			}
			if got != 5 {
				t.Fatalf("%s: admitted %d of 8 in one second, want 5", key, got)
			}
			slot, err := admin.ClusterKeySlot(ctx, keyOf(stores[0], key, p, 1, clk.Now())).Result()
			if err != nil {
				t.Fatal(err)
			}
			slot0, _ := admin.ClusterKeySlot(ctx, keyOf(stores[0], key, p, 0, clk.Now())).Result()
			if slot0 != slot {
				t.Fatalf("%s: windows in slots %d and %d", key, slot0, slot)
			}
			owners[cl.SlotOwner(t, int(slot))]++
		}
		if len(owners) != 3 {
			t.Fatalf("30 clients landed on %d masters (%v), want 3", len(owners), owners)
		}
	})

	t.Run("replicas_share_one_limit", func(t *testing.T) {
		clk.Advance(time.Minute)
		if got := fire(t, ls, "shared", 400); got != 5 {
			t.Fatalf("admitted %d of 400, want 5 (the one-second window)", got)
		}
	})

	t.Run("moved_slot_keeps_counts", func(t *testing.T) {
		clk.Advance(time.Minute)
		for range 3 {
			if d, err := ls[0].Allow(ctx, "mover", 1); err != nil || !d.Allowed {
				t.Fatalf("before move: %+v, %v", d, err)
			}
		}
		slot, err := admin.ClusterKeySlot(ctx, keyOf(stores[0], "mover", p, 0, clk.Now())).Result()
		if err != nil {
			t.Fatal(err)
		}
		from := cl.SlotOwner(t, int(slot))
		to := 0
		for i, n := range cl.Nodes {
			if n.Addr() != from {
				to = i
				break
			}
		}
		cl.MoveSlot(t, int(slot), to)
		if got := cl.SlotOwner(t, int(slot)); got != cl.Nodes[to].Addr() {
			t.Fatalf("slot %d served by %s after the move, want %s", slot, got, cl.Nodes[to].Addr())
		}
		// Every replica still routes the slot to the old master: each
		// gets MOVED and follows it. 3 of 5 were spent before the move.
		got := 0
		for i := range 4 {
			d, err := ls[i].Allow(ctx, "mover", 1)
			if err != nil {
				t.Fatalf("replica %d after move: %v", i, err)
			}
			if d.Allowed {
				got++
			}
		}
		if got != 2 {
			t.Fatalf("after the move: admitted %d of 4, want 2 (counts moved with the slot)", got)
		}
		old := redistest.Client(t, from)
		info, err := old.Info(ctx, "errorstats").Result()
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(info, "errorstat_MOVED:count=") {
			t.Fatalf("the old master answered no MOVED:\n%s", info)
		}
	})
}

// TestClusterMigrationUnderLoad moves a hot key's slot to another master
// and back while four replicas decide for it from 32 goroutines: first
// the keys move and the slot stays MIGRATING (ASK, and TRYAGAIN for a
// script whose two windows are split), then the move completes (MOVED
// for every replica's stale slot map). No decision may fail (nothing is
// lost) and the counts in Redis must equal the decisions admitted
// (nothing is charged twice, nothing dropped after it ran).
func TestClusterMigrationUnderLoad(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("migrate", limiter.PerMinute(1<<30), limiter.PerHour(1<<30))
	for _, mode := range []path{pathPlain, pathBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			prefix := testPrefix(t)
			clk := limitertest.New(t0)
			var (
				ls     []*limiter.Limiter
				stores []*Store
			)
			for range 4 {
				s, err := New(cl.Client(t), WithPrefix(prefix), withPath(mode), WithTimeout(5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				stores = append(stores, s)
				ls = append(ls, newLimiter(t, p, s, clk))
			}
			const key = "hot"
			slot, err := admin.ClusterKeySlot(ctx, keyOf(stores[0], key, p, 0, t0)).Result()
			if err != nil {
				t.Fatal(err)
			}
			// Beside the hot key, keys of other slots on its master: under
			// Batch their decisions share node calls with the hot key's,
			// which find its slot gone mid-move.
			keys := append([]string{key}, keysOnNode(t, cl, admin, cl.SlotOwner(t, int(slot)), 7, key)...)
			admitted := make([]atomic.Int64, len(keys))
			for i, k := range keys {
				if _, err := ls[0].Allow(ctx, k, 1); err != nil {
					t.Fatal(err)
				}
				admitted[i].Add(1)
			}
			other := func() int {
				owner := cl.SlotOwner(t, int(slot))
				for i, n := range cl.Nodes {
					if n.Addr() != owner {
						return i
					}
				}
				t.Fatal("one node serves every slot")
				return 0
			}

			stop := make(chan struct{})
			var (
				wg      sync.WaitGroup
				failed  atomic.Int64
				decided atomic.Int64
				firstE  atomic.Pointer[error]
			)
			for g := range 32 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					l := ls[g%4]
					for i := g; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						// Half the decisions for the hot key.
						k := 0
						if i%2 == 1 {
							k = 1 + i/2%(len(keys)-1)
						}
						d, err := l.Allow(ctx, keys[k], 1)
						decided.Add(1)
						switch {
						case err != nil:
							failed.Add(1)
							firstE.CompareAndSwap(nil, &err)
						case d.Allowed:
							admitted[k].Add(1)
						}
					}
				}()
			}
			// Each phase lasts until the callers have made 200 more
			// decisions, whatever the machine's speed (10 s at most: a
			// stall fails the test rather than hanging it).
			pause := func() {
				start := decided.Load()
				if !await(10*time.Second, func() bool { return decided.Load() >= start+200 }) {
					t.Fatalf("the callers made %d decisions in 10 s, want 200", decided.Load()-start)
				}
			}
			pause()
			for range 2 { // away, then back
				finish := cl.BeginMove(t, int(slot), other())
				pause() // ASK
				finish()
				pause() // MOVED
			}
			close(stop)
			wg.Wait()
			if n := failed.Load(); n > 0 {
				t.Fatalf("%d decisions failed during the migration, the first: %v", n, *firstE.Load())
			}
			for i, k := range keys {
				want := admitted[i].Load()
				if want < 50 {
					t.Fatalf("%s: only %d decisions in the run: the test proved nothing", k, want)
				}
				for w := range 2 {
					got, err := admin.Get(ctx, keyOf(stores[0], k, p, w, t0)).Int64()
					if err != nil {
						t.Fatalf("%s, window %d: %v", k, w, err)
					}
					if got != want {
						t.Fatalf("%s, window %d: Redis counts %d, %d decisions admitted; want equal", k, w, got, want)
					}
				}
			}
			var redirects int
			for _, n := range cl.Nodes {
				info, err := redistest.Client(t, n.Addr()).Info(ctx, "errorstats").Result()
				if err != nil {
					t.Fatal(err)
				}
				for _, l := range strings.Split(info, "\n") {
					if strings.HasPrefix(l, "errorstat_") {
						t.Logf("%s %s", n.Addr(), strings.TrimSpace(l))
					}
				}
				if strings.Contains(info, "errorstat_ASK:") {
					redirects |= 1
				}
				if strings.Contains(info, "errorstat_MOVED:") {
					redirects |= 2
				}
			}
			if redirects != 3 {
				t.Fatalf("redirects seen (1 ASK, 2 MOVED): %d, want both", redirects)
			}
			var resent uint64
			for _, s := range stores {
				resent += s.Stats().Resent
			}
			// Batch sends node calls; Plain one call per decision.
			if resent == 0 && mode == pathBatch {
				t.Fatal("no decision found off its node and sent again: the moves did not meet a node call")
			}
			t.Logf("%d decisions admitted for the hot key over two moves; %d sent again", admitted[0].Load(), resent)
		})
	}
}

// TestClusterTryAgain: mid-migration, a source that holds one window's key
// of a decision but not the other's answers TRYAGAIN (the script ran
// nowhere). go-redis retries it only for retryable commands, so the store
// sends it again itself; once the other key has moved too, the source
// answers ASK, go-redis follows it, and the decision is charged once.
func TestClusterTryAgain(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	p := limiter.MustPolicy("tryagain", limiter.PerMinute(100), limiter.PerHour(100))
	for _, mode := range []path{pathPlain, pathBatch} {
		t.Run(mode.String(), func(t *testing.T) {
			s := newStore(t, cl.Client(t), withPath(mode))
			l := newLimiter(t, p, s, limitertest.New(t0))
			key := "k-" + mode.String() // a slot of its own per subtest
			if d, err := l.Allow(ctx, key, 1); err != nil || !d.Allowed {
				t.Fatalf("before the move: %+v, %v", d, err)
			}
			k0, k1 := keyOf(s, key, p, 0, t0), keyOf(s, key, p, 1, t0)
			slot, err := admin.ClusterKeySlot(ctx, k0).Result()
			if err != nil {
				t.Fatal(err)
			}
			srcAddr := cl.SlotOwner(t, int(slot))
			var src, dst *redistest.Server
			for _, n := range cl.Nodes {
				if n.Addr() == srcAddr {
					src = n
				} else if dst == nil {
					dst = n
				}
			}
			sc, dc := redistest.Client(t, src.Addr()), redistest.Client(t, dst.Addr())
			srcID, _ := sc.ClusterMyID(ctx).Result()
			dstID, _ := dc.ClusterMyID(ctx).Result()
			do := func(c *redis.Client, args ...any) {
				t.Helper()
				if err := c.Do(ctx, args...).Err(); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
			}
			do(dc, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID)
			do(sc, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID)
			do(sc, "MIGRATE", "127.0.0.1", dst.Port(), "", 0, 5000, "KEYS", k0) // k1 stays: split
			tryAgain := redistest.ErrorCount(t, src.Addr(), "TRYAGAIN")
			moved := make(chan struct{})
			go func() { // once the source has refused the split call
				defer close(moved)
				awaitErrors(t, src.Addr(), "TRYAGAIN", tryAgain)
				_ = sc.Do(ctx, "MIGRATE", "127.0.0.1", dst.Port(), "", 0, 5000, "KEYS", k1).Err()
			}()
			d, err := l.Allow(ctx, key, 1)
			<-moved
			if err != nil || !d.Allowed {
				t.Fatalf("during the split migration: %+v, %v; want admitted", d, err)
			}
			if n := redistest.ErrorCount(t, src.Addr(), "TRYAGAIN"); n <= tryAgain {
				t.Fatalf("the source answered no TRYAGAIN (%d before, %d after): the test proved nothing", tryAgain, n)
			}
			// Other tests' keys of this slot (the Cluster is shared) move
			// too: a slot is handed over empty.
			for {
				rest, err := sc.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
				if err != nil {
					t.Fatal(err)
				}
				if len(rest) == 0 {
					break
				}
				do(sc, append([]any{"MIGRATE", "127.0.0.1", dst.Port(), "", 0, 5000, "KEYS"}, toAny(rest)...)...)
			}
			for _, n := range cl.Nodes {
				do(redistest.Client(t, n.Addr()), "CLUSTER", "SETSLOT", slot, "NODE", dstID)
			}
			for _, k := range []string{k0, k1} {
				if got, err := admin.Get(ctx, k).Int64(); err != nil || got != 2 {
					t.Fatalf("%s: %d, %v; want 2 (charged once)", k, got, err)
				}
			}
		})
	}
}

// toAny returns ss as a slice of any, for a command's arguments.
func toAny(ss []string) []any {
	a := make([]any, len(ss))
	for i, s := range ss {
		a[i] = s
	}
	return a
}
