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
	"github.com/redis/go-redis/v9"
)

// startRing starts n servers and returns a Ring of them, with the
// heartbeat given (how soon a dead shard leaves the Ring's hashing).
func startRing(t *testing.T, n int, heartbeat time.Duration) (*redis.Ring, []*redistest.Server) {
	t.Helper()
	addrs := map[string]string{}
	var servers []*redistest.Server
	for i := range n {
		s := redistest.StartServer(t)
		servers = append(servers, s)
		addrs[fmt.Sprintf("shard%d", i)] = s.Addr()
	}
	// One dial per attempt: a dead shard fails at once.
	r := redis.NewRing(&redis.RingOptions{Addrs: addrs, ContextTimeoutEnabled: true,
		HeartbeatFrequency: heartbeat, DialTimeout: 200 * time.Millisecond, DialerRetries: 1})
	t.Cleanup(func() { r.Close() })
	if err := r.ForEachShard(context.Background(), func(ctx context.Context, c *redis.Client) error {
		return c.ScriptLoad(ctx, takeSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
	return r, servers
}

// TestRingBatch: on a Ring, a round's decisions over keys of every shard
// make one script call per shard, on the shard the Ring itself routes
// each key to; every decision gets its own answer, and each shard holds
// exactly its keys' counts. Two of the keys share a Cluster slot but not
// a shard: a Ring hashes the whole tag, not the slot.
func TestRingBatch(t *testing.T) {
	ctx := context.Background()
	r, servers := startRing(t, 3, time.Hour)
	s := newStore(t, r, WithOverLimitCache(0))
	if s.path != pathBatch || !isRingRouter(s) {
		t.Fatalf("path %v on a Ring, want Batch per shard", s.path)
	}
	p := limiter.MustPolicy("ring", limiter.PerMinute(1000), limiter.PerHour(1000))
	shardOf := func(k string) string {
		c, err := r.GetShardClientForKey(tag(k))
		if err != nil {
			t.Fatal(err)
		}
		return c.Options().Addr
	}
	names := []string{}
	for i := range 10 {
		names = append(names, fmt.Sprintf("r-%d", i))
	}
	// A pair in one slot on two shards, the first of them sorting first.
	bySlot := map[uint16]string{}
	for i := 0; len(names) < 12; i++ {
		k := fmt.Sprintf("pair-%d", i)
		o, ok := bySlot[requestSlot(k)]
		if ok && shardOf(o) != shardOf(k) {
			names = append(names, o, k)
		}
		bySlot[requestSlot(k)] = k
	}
	var reqs []limiter.Request
	per := func(i int) int { return 1 + i%4 }
	keys := len(names)
	for round := range 4 {
		for i, k := range names {
			if round < per(i) {
				reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
			}
		}
	}
	calls := sendTogether(t, s, reqs)
	found := map[string][]int64{}
	for i, c := range calls {
		if c.err != nil || !c.res.allowed {
			t.Fatalf("request %d (%s): %+v, %v; want admitted", i, c.req.Key, c.res, c.err)
		}
		found[c.req.Key] = append(found[c.req.Key], c.res.counts[0])
	}
	shards := map[string]bool{}
	for i, k := range names {
		got := found[k]
		slices.Sort(got)
		for j, n := range got {
			if n != int64(j) {
				t.Fatalf("%s: counts found %v, want each of 0..%d once", k, got, per(i)-1)
			}
		}
		// The Ring's own routing of the stored keys names the shard.
		owner, err := r.GetShardClientForKey(keyOf(s, k, p, 0, t0))
		if err != nil {
			t.Fatal(err)
		}
		shards[owner.Options().Addr] = true
		for _, srv := range servers {
			for w := range 2 {
				n, err := redistest.Client(t, srv.Addr()).Get(ctx, keyOf(s, k, p, w, t0)).Int64()
				want := int64(0)
				if srv.Addr() == owner.Options().Addr {
					want = int64(per(i))
				}
				if err == redis.Nil {
					err = nil
				}
				if err != nil || n != want {
					t.Fatalf("%s, window %d, on %s: %d, %v; want %d", k, w, srv.Addr(), n, err, want)
				}
			}
		}
	}
	if len(shards) != 3 {
		t.Fatalf("%d keys on %d shards, want 3: the test proved less", keys, len(shards))
	}
	if st := s.Stats(); st.RoundTrips != 3 {
		t.Fatalf("%d script calls for %d decisions on 3 shards, want one per shard", st.RoundTrips, len(reqs))
	}
}

// TestRingBatchShardDown: a dead shard fails only the decisions whose keys
// the Ring routes to it, not those of the other shards in the same round,
// round after round: each shard has its own breaker, so the dead shard's
// opens and says so, and the live shards' stay closed. Once the Ring's heartbeat has
// taken the dead shard out of the hashing, its keys are decided on the
// live shards.
func TestRingBatchShardDown(t *testing.T) {
	ctx := context.Background()
	r, servers := startRing(t, 3, time.Second)
	var ev events
	s := newStore(t, r, WithOverLimitCache(0), WithTimeout(500*time.Millisecond), WithObserver(ev.observe))
	p := limiter.MustPolicy("ringdown", limiter.PerMinute(1000))
	dead := servers[0].Addr()
	var onDead, onLive []string
	for i := 0; len(onDead) < 2 || len(onLive) < 4; i++ {
		k := fmt.Sprintf("d-%d", i)
		c, err := r.GetShardClientForKey(tag(k))
		if err != nil {
			t.Fatal(err)
		}
		if c.Options().Addr == dead {
			onDead = append(onDead, k)
		} else {
			onLive = append(onLive, k)
		}
	}
	servers[0].Kill()
	var reqs []limiter.Request
	for _, k := range append(slices.Clone(onDead), onLive...) {
		reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
	}
	for round := range 2 * defaultBreakerFailures {
		for i, c := range sendTogether(t, s, reqs) {
			isDead := i < len(onDead)
			switch {
			case isDead && c.err == nil && round == 0:
				t.Errorf("request %d (%s, on the dead shard): %+v; want an error", i, c.req.Key, c.res)
			case !isDead && (c.err != nil || !c.res.allowed):
				t.Fatalf("round %d, request %d (%s, on a live shard): %+v, %v; want admitted", round, i, c.req.Key, c.res, c.err)
			}
		}
	}
	byNode := s.Health()
	for _, srv := range servers[1:] {
		if h, ok := byNode[srv.Addr()]; !ok || h != Healthy {
			t.Fatalf("one shard of three down: live shard %s is %v (known %v), want healthy; all %v", srv.Addr(), h, ok, byNode)
		}
	}
	if byNode[dead] != Unavailable {
		t.Fatalf("dead shard %s is %v, want unavailable; all %v", dead, byNode[dead], byNode)
	}
	ev.mu.Lock()
	for _, e := range ev.got {
		if e.Node != dead {
			t.Errorf("event %+v names another node than the dead shard %s", e, dead)
		}
	}
	ev.mu.Unlock()
	// The heartbeat takes the dead shard out; its keys move to the others.
	// Once the Ring routes the key elsewhere, it must be decided there.
	var (
		moved bool
		d     limiter.Decision
		err   error
	)
	if !await(10*time.Second, func() bool {
		if c, err := r.GetShardClientForKey(tag(onDead[0])); err != nil || c.Options().Addr == dead {
			return false
		}
		moved = true
		d, err = s.Take(ctx, limiter.Request{Key: onDead[0], Policy: p, Now: t0, Cost: 1})
		return err == nil && d.Allowed
	}) {
		t.Fatalf("the dead shard's key still fails after 10 s (moved off it by the Ring: %v): %+v, %v", moved, d, err)
	}
}

// TestRingShardKilled: kill -9 of one shard of three under load, a key
// per caller and two of six callers on the dead shard: at most 1% of the
// decisions for keys on the live shards fail (each shard has its own
// breaker), before and after the Ring's heartbeat takes the dead shard
// out. A Ring moves no keys, so the dead shard's keys start afresh on the
// others: only the live shards' windows are checked against the limit.
func TestRingShardKilled(t *testing.T) {
	const limit = 40
	r, servers := startRing(t, 3, 500*time.Millisecond)
	s := newStore(t, r, WithOverLimitCache(0), WithTimeout(100*time.Millisecond))
	l, err := limiter.New(limiter.MustPolicy("ringkill", limiter.PerSecond(limit)), limiter.WithStore(s))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	dead := servers[0].Addr()
	var (
		keys   []string
		onDead = map[string]bool{}
	)
	deadKeys := 0
	for i := 0; len(keys) < 6; i++ {
		k := fmt.Sprintf("r%d", i)
		c, err := r.GetShardClientForKey(tag(k))
		if err != nil {
			t.Fatal(err)
		}
		onDead[k] = c.Options().Addr == dead
		if onDead[k] && deadKeys < 2 || !onDead[k] && len(keys)-deadKeys < 4 {
			keys = append(keys, k)
			if onDead[k] {
				deadKeys++
			}
		}
	}
	// Each caller counts its decisions in each phase: 0 before the kill,
	// 1 after it, 2 once the Ring's heartbeat has moved the dead shard's
	// keys to the others. reached[p] is closed once every caller has had
	// enough decisions made in phase p.
	const enough = 20
	var (
		mu               sync.Mutex
		live, liveFailed int
		admitted         = map[string]map[int64]int{}
		phase            atomic.Int32
		reached          [3]chan struct{}
		waiting          [3]atomic.Int64
		stop             atomic.Bool
		wg               sync.WaitGroup
	)
	for p := range reached {
		reached[p] = make(chan struct{})
		waiting[p].Store(int64(len(keys)))
	}
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var decided [3]int
			for !stop.Load() {
				ph := phase.Load()
				d, err := l.Allow(context.Background(), k, 1)
				if err == nil {
					if decided[ph]++; decided[ph] == enough && waiting[ph].Add(-1) == 0 {
						close(reached[ph])
					}
				}
				mu.Lock()
				if !onDead[k] { // a live shard's key
					if ph > 0 {
						live++
						if err != nil {
							liveFailed++
						}
					}
					if err == nil && d.Allowed {
						if admitted[k] == nil {
							admitted[k] = map[int64]int{}
						}
						admitted[k][d.DecidedAt().UnixMilli()/1000]++
					}
				}
				mu.Unlock()
			}
		}()
	}
	halt := func() {
		stop.Store(true)
		wg.Wait()
	}
	if !closedWithin(reached[0], 10*time.Second) {
		halt()
		t.Fatalf("load before the kill: %d of %d callers not decided %d times in 10 s", waiting[0].Load(), len(keys), enough)
	}
	phase.Store(1)
	servers[0].Kill()
	// Past the heartbeats that take the dead shard out of the Ring's
	// hashing: its keys are routed to the live shards.
	if !await(10*time.Second, func() bool {
		for _, k := range keys {
			c, err := r.GetShardClientForKey(tag(k))
			if err != nil || onDead[k] && c.Options().Addr == dead {
				return false
			}
		}
		return true
	}) {
		halt()
		t.Fatalf("the Ring still routes keys to the dead shard %s after 10 s", dead)
	}
	phase.Store(2)
	if !closedWithin(reached[2], 10*time.Second) {
		halt()
		t.Fatalf("after the Ring moved the dead shard's keys: %d of %d callers not decided %d times in 10 s", waiting[2].Load(), len(keys), enough)
	}
	halt()
	t.Logf("live shards' keys after the kill: %d decisions, %d failed; %+v", live, liveFailed, s.Stats())
	if live == 0 || liveFailed*100 > live {
		t.Errorf("live shards' keys: %d of %d decisions failed, want at most 1%%", liveFailed, live)
	}
	for k, ws := range admitted {
		for w, n := range ws {
			if n > limit {
				t.Errorf("%s, window %d: admitted %d, over the limit %d", k, w, n, limit)
			}
		}
	}
}
