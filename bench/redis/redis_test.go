package redis

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ululeredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

const (
	callers = 64
	keys    = 10000
)

// addr is the Redis under test: the local one unless REDIS_ADDR names
// another (a private redis-server keeps other users' commands out of the
// server CPU figure).
var addr = func() string {
	if a := os.Getenv("REDIS_ADDR"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}()

// counter is a go-redis hook counting the commands a client sends.
type counter struct{ n atomic.Int64 }

func (c *counter) DialHook(next goredis.DialHook) goredis.DialHook { return next }

func (c *counter) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *counter) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func client(b *testing.B) (*goredis.Client, *counter) {
	b.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, PoolSize: callers, ContextTimeoutEnabled: true})
	if err := c.Ping(context.Background()).Err(); err != nil {
		b.Fatalf("no Redis at %s: %v", addr, err)
	}
	h := &counter{}
	c.AddHook(h)
	b.Cleanup(func() { c.Close() })
	return c, h
}

// cpuTime returns the CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU returns the CPU time the Redis servers behind c have used
// (INFO cpu): the one server of a single-node client, the sum over the
// masters of a Cluster client or the shards of a Ring.
func serverCPU(b *testing.B, c goredis.UniversalClient) time.Duration {
	return forEachServer(b, c, "cpu", infoCPU)
}

// scriptTime returns the time the Redis servers behind c have spent
// running scripts (INFO commandstats: EVALSHA and EVAL, the commands they
// call included), summed as serverCPU sums.
func scriptTime(b *testing.B, c goredis.UniversalClient) time.Duration {
	return forEachServer(b, c, "commandstats", infoScript)
}

// forEachServer adds up read over INFO section of every server behind c.
func forEachServer(b *testing.B, c goredis.UniversalClient, section string, read func(*testing.B, *goredis.StringCmd) time.Duration) time.Duration {
	ctx := context.Background()
	var forEach func(context.Context, func(context.Context, *goredis.Client) error) error
	switch c := c.(type) {
	case *goredis.ClusterClient:
		forEach = c.ForEachMaster
	case *goredis.Ring:
		forEach = c.ForEachShard
	default:
		return read(b, c.Info(ctx, section))
	}
	var (
		mu  sync.Mutex
		sum time.Duration
	)
	err := forEach(ctx, func(ctx context.Context, n *goredis.Client) error {
		info := n.Info(ctx, section)
		if err := info.Err(); err != nil {
			return err
		}
		t := read(b, info)
		mu.Lock()
		sum += t
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return sum
}

// infoScript adds up the usec of cmdstat_evalsha and cmdstat_eval in one
// INFO commandstats reply.
func infoScript(b *testing.B, cmd *goredis.StringCmd) time.Duration {
	info, err := cmd.Result()
	if err != nil {
		b.Error(err)
		return 0
	}
	var us int64
	for _, line := range strings.Split(info, "\n") {
		for _, f := range []string{"cmdstat_evalsha:", "cmdstat_eval:"} {
			v, ok := strings.CutPrefix(strings.TrimSpace(line), f)
			if !ok {
				continue
			}
			for _, kv := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(kv, "usec="); ok {
					x, _ := strconv.ParseInt(n, 10, 64)
					us += x
				}
			}
		}
	}
	return time.Duration(us) * time.Microsecond
}

// infoCPU adds up used_cpu_sys and used_cpu_user of one INFO cpu reply.
func infoCPU(b *testing.B, cmd *goredis.StringCmd) time.Duration {
	info, err := cmd.Result()
	if err != nil {
		b.Error(err)
		return 0
	}
	var t float64
	for _, line := range strings.Split(info, "\n") {
		for _, f := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), f); ok {
				x, _ := strconv.ParseFloat(v, 64)
				t += x
			}
		}
	}
	return time.Duration(t * float64(time.Second))
}

// run calls decide from 64 goroutines, each over its own run of keys, and
// reports decisions/s, commands per decision, and the CPU time per
// decision of this process and of the Redis server (which includes any
// other client of that server).
func run(b *testing.B, c goredis.UniversalClient, h *counter, decide func(ctx context.Context, key string) (bool, error), names []string) {
	b.Helper()
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	var seq atomic.Int64
	m := startMeter(b, c, h)
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(seq.Add(1)) * 7919
		for pb.Next() {
			i++
			if _, err := decide(ctx, names[i%len(names)]); err != nil {
				b.Error(err)
				return
			}
		}
	})
	m.report(b)
}

// A meter holds what a run reads before it starts: this process's and
// the Redis servers' CPU time, the commands the client has sent, and the
// instant the timed part began.
type meter struct {
	c          goredis.UniversalClient
	h          *counter
	cpu0, srv0 time.Duration
	script0    time.Duration
	before     int64
	start      time.Time
}

// startMeter reads the counters and starts the benchmark's timer.
func startMeter(b *testing.B, c goredis.UniversalClient, h *counter) meter {
	m := meter{c: c, h: h}
	m.cpu0, m.srv0, m.script0 = cpuTime(b), serverCPU(b, c), scriptTime(b, c)
	m.before = h.n.Load() // after INFO, which the hook counts too
	b.ResetTimer()
	m.start = time.Now()
	return m
}

// report stops the timer and reports decisions/s, commands per decision,
// and the CPU time per decision of this process and of the Redis servers
// (which includes any other client of theirs).
func (m meter) report(b *testing.B) {
	el := time.Since(m.start)
	b.StopTimer()
	after := m.h.n.Load()
	cpu1, srv1, script1 := cpuTime(b), serverCPU(b, m.c), scriptTime(b, m.c)
	b.ReportMetric(float64(cpu1-m.cpu0)/float64(b.N), "client-cpu-ns/op")
	b.ReportMetric(float64(srv1-m.srv0)/float64(b.N), "server-cpu-ns/op")
	b.ReportMetric(float64(script1-m.script0)/float64(b.N), "script-ns/op")
	b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(after-m.before)/float64(b.N), "redis-cmds/op")
}

func keyNames(prefix string) []string {
	out := make([]string, keys)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// contender builds one limiter on a fresh client; limit is per hour.
type contender struct {
	name string
	make func(b *testing.B, c goredis.UniversalClient, limit int64) func(ctx context.Context, key string) (bool, error)
}

// ours is the store with its defaults, on the path it picks for the
// client's kind: Batch on a *redis.Client, Batch per node on a Cluster
// client, Plain on a Ring.
func ours(b *testing.B, c goredis.UniversalClient, limit int64) func(context.Context, string) (bool, error) {
	return oursShaped(b, c, shapes[0], limit)
}

// oursShaped is ours on the policy and clock of sh.
func oursShaped(b *testing.B, c goredis.UniversalClient, sh shape, limit int64) func(context.Context, string) (bool, error) {
	// The peers have no deadline but go-redis's 3s read timeout; the
	// store gets the same, so a loaded machine measures speed, not the
	// failure policy.
	opts := []redisstore.Option{redisstore.WithTimeout(3 * time.Second),
		redisstore.WithPrefix("bench:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":")}
	if sh.server {
		opts = append(opts, redisstore.WithServerClock())
	}
	s, err := redisstore.New(c, opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	l, err := limiter.New(limiter.MustPolicy("bench", sh.rates(limit)...), limiter.WithStore(s))
	if err != nil {
		b.Fatal(err)
	}
	return func(ctx context.Context, key string) (bool, error) {
		d, err := l.Allow(ctx, key, 1)
		return d.Allowed, err
	}
}

// redisRate is go-redis/redis_rate, one script call per decision.
func redisRate(b *testing.B, c goredis.UniversalClient, limit int64) func(context.Context, string) (bool, error) {
	l := redis_rate.NewLimiter(c)
	lim := redis_rate.PerHour(int(limit))
	return func(ctx context.Context, key string) (bool, error) {
		r, err := l.Allow(ctx, key, lim)
		if err != nil {
			return false, err
		}
		return r.Allowed > 0, nil
	}
}

var contenders = []contender{
	{"fixedwindow", ours},
	{"redis_rate", redisRate},
	{"ulule", func(b *testing.B, c goredis.UniversalClient, limit int64) func(context.Context, string) (bool, error) {
		st, err := ululeredis.NewStoreWithOptions(c, ulule.StoreOptions{Prefix: "bench-ulule-" + strconv.FormatInt(time.Now().UnixNano(), 36)})
		if err != nil {
			b.Fatal(err)
		}
		l := ulule.New(st, ulule.Rate{Period: time.Hour, Limit: limit})
		return func(ctx context.Context, key string) (bool, error) {
			r, err := l.Get(ctx, key)
			if err != nil {
				return false, err
			}
			return !r.Reached, nil
		}
	}},
}

// BenchmarkAdmit: every decision admits (a limit no key reaches), so every
// one needs Redis; one node, a *redis.Client. The store and its floor
// (floor_test.go) run on every shape (the limiter's clock and Redis's, one
// window and two), the peers on one window.
func BenchmarkAdmit(b *testing.B) {
	runShaped(b, "admit-", keys, func(b *testing.B) (goredis.UniversalClient, *counter) { return client(b) })
	for _, ct := range contenders[1:] {
		b.Run(ct.name, func(b *testing.B) {
			c, h := client(b)
			decide := ct.make(b, c, 1<<30)
			run(b, c, h, decide, keyNames("admit-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"-"))
		})
	}
}

// BenchmarkAdmitKeys1000: the store with its defaults against the peers
// on one node, 64 callers over 1,000 keys, every decision admitted: the
// side-by-side harness of issue 27, where the store's decisions/s moved
// far more from run to run than ulule's.
func BenchmarkAdmitKeys1000(b *testing.B) {
	for _, ct := range contenders {
		b.Run(ct.name, func(b *testing.B) {
			c, h := client(b)
			decide := ct.make(b, c, 1<<30)
			run(b, c, h, decide, keyNames("admit1000-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")[:1000])
		})
	}
}

// BenchmarkOverLimit: every key is already over its limit (1 per hour,
// spent before the timer starts), so every decision refuses.
func BenchmarkOverLimit(b *testing.B) {
	for _, ct := range contenders {
		b.Run(ct.name, func(b *testing.B) {
			c, h := client(b)
			decide := ct.make(b, c, 1)
			names := keyNames("over-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")
			ctx := context.Background()
			for _, k := range names[:1000] {
				for range 2 {
					if _, err := decide(ctx, k); err != nil {
						b.Fatal(err)
					}
				}
			}
			run(b, c, h, decide, names[:1000])
		})
	}
}
