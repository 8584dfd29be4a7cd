package redisstore

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

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
	cl := redistest.StartCluster(t)
	admin := cl.Client(t)
	const limit, keys = 1000, 24
	per := func(i int) int { return 5 + i } // decisions for key i
	total := 0
	p := limiter.MustPolicy("routes", limiter.PerHour(limit))
	s := newStore(t, cl.Client(t), WithOverLimitCache(0))
	if s.batch == nil || s.batch.cluster == nil {
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
	cl := redistest.StartCluster(t)
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
	writeCount(t, admin, AppClock, keyOf(s, bad, p, 0, t0), "1.0")
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
