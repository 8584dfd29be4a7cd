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
