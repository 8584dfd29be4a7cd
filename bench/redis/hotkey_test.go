package redis

import (
	"context"
	"math/bits"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	goredis "github.com/redis/go-redis/v9"
)

// Replicas of BenchmarkHotKey, each with its own client and store, and
// callers per replica.
const (
	hotReplicas = 4
	hotCallers  = 16
)

// hotContenders are the ways a replica decides: one script call per
// decision (redis_rate, a peer: the store itself always shares round
// trips on a single node), the store's default (Batch), and the store
// with leases.
var hotContenders = []contender{
	{"redis_rate", redisRate},
	{"fixedwindow_batch", replica()},
	{"fixedwindow_lease", replica(redisstore.WithLeases(0, 0))},
}

// replica builds one replica of the store under a prefix shared by the
// replicas of one run (hotPrefix).
func replica(opts ...redisstore.Option) func(b *testing.B, c goredis.UniversalClient, limit int64) func(context.Context, string) (bool, error) {
	return func(b *testing.B, c goredis.UniversalClient, limit int64) func(context.Context, string) (bool, error) {
		s, err := redisstore.New(c, append([]redisstore.Option{redisstore.WithTimeout(3 * time.Second),
			redisstore.WithPrefix(hotPrefix)}, opts...)...)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		hotStores = append(hotStores, s)
		l, err := limiter.New(limiter.MustPolicy("hot", limiter.PerHour(limit)), limiter.WithStore(s))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { l.Close() })
		return func(ctx context.Context, key string) (bool, error) {
			d, err := l.Allow(ctx, key, 1)
			return d.Allowed, err
		}
	}
}

// hotPrefix is set afresh for each sub-benchmark run, so its replicas
// share counts and no two runs do; hotStores are the run's stores.
var (
	hotPrefix string
	hotStores []*redisstore.Store
)

// BenchmarkHotKey runs 4 replicas (separate clients and limiters) with 16
// callers each, all on one key (keys=1) or spread over 10,000 (cold keys:
// what leasing costs a key it does not help), under a limit that never
// refuses. It reports decisions/s, Redis commands per decision over the
// four clients, the 99th percentile of one decision's latency, the CPU
// time of this process per decision (steadier than decisions/s on a
// shared machine), and the share of decisions made from a lease
// (leased/op; 0 without leases).
//
//	cd bench && go test -run '^$' -bench HotKey -count 6 ./redis
func BenchmarkHotKey(b *testing.B) {
	for _, nkeys := range []int{1, keys} {
		for _, ct := range hotContenders {
			b.Run("keys="+strconv.Itoa(nkeys)+"/"+ct.name, func(b *testing.B) {
				hotPrefix = "bench-hot:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
				hotStores = nil
				var (
					decide []func(context.Context, string) (bool, error)
					hooks  []*counter
				)
				for range hotReplicas {
					c, h := client(b)
					decide = append(decide, ct.make(b, c, 1<<30))
					hooks = append(hooks, h)
				}
				names := keyNames(hotPrefix + "k")[:nkeys]
				hotRun(b, decide, hooks, names)
			})
		}
	}
}

// hotRun calls the replicas' decide from hotCallers goroutines each.
func hotRun(b *testing.B, decide []func(context.Context, string) (bool, error), hooks []*counter, names []string) {
	b.Helper()
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((hotReplicas*hotCallers + procs - 1) / procs)
	b.ReportAllocs()
	cmds := func() (n int64) {
		for _, h := range hooks {
			n += h.n.Load()
		}
		return n
	}
	leased := func() (n uint64) {
		for _, s := range hotStores {
			n += s.Stats().Leased
		}
		return n
	}
	var (
		seq  atomic.Int64
		mu   sync.Mutex
		hist latencies
	)
	before, leased0, cpu0 := cmds(), leased(), cpuTime(b)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		g := int(seq.Add(1))
		d := decide[g%len(decide)]
		var h latencies
		i := g * 7919
		for pb.Next() {
			i++
			t := time.Now()
			if _, err := d(ctx, names[i%len(names)]); err != nil {
				b.Error(err)
				return
			}
			h.add(time.Since(t))
		}
		mu.Lock()
		hist.merge(&h)
		mu.Unlock()
	})
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "client-cpu-ns/op")
	b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(cmds()-before)/float64(b.N), "redis-cmds/op")
	b.ReportMetric(float64(hist.quantile(0.99)), "p99-ns")
	b.ReportMetric(float64(leased()-leased0)/float64(b.N), "leased/op")
}

// latencies is a histogram of durations with 16 buckets per power of
// two (within 6.25% of the true value), so that millions of decisions
// need no slice.
type latencies struct {
	n [64 * 16]uint64
}

func bucket(d time.Duration) int {
	v := uint64(max(d, 1))
	e := bits.Len64(v) - 1
	if e < 4 {
		return int(v)
	}
	return e*16 + int(v>>(e-4)&15)
}

// lower returns the smallest duration of bucket i.
func lower(i int) time.Duration {
	e, m := i/16, i%16
	if e < 4 {
		return time.Duration(i)
	}
	return time.Duration((16 + uint64(m)) << (e - 4))
}

func (l *latencies) add(d time.Duration) { l.n[bucket(d)]++ }

func (l *latencies) merge(o *latencies) {
	for i, v := range o.n {
		l.n[i] += v
	}
}

// quantile returns the upper end of the bucket holding the q'th quantile.
func (l *latencies) quantile(q float64) time.Duration {
	var total uint64
	for _, v := range l.n {
		total += v
	}
	want := uint64(q * float64(total))
	var seen uint64
	for i, v := range l.n {
		seen += v
		if seen > want {
			return lower(i + 1)
		}
	}
	return 0
}
