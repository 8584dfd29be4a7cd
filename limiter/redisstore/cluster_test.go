package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestCluster runs the store on a three-master Redis Cluster started from
// the redis-server binary: layered windows of one client share a slot (no
// CROSSSLOT), clients spread over every master, four replicas share one
// limit, and a slot moved to another master mid-run (MOVED) keeps its
// counts.
func TestCluster(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
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
	if stores[0].batch != nil {
		t.Fatal("Batch pipelining engaged on a Cluster client")
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
