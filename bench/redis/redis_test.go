package redis

import (
	"context"
	"runtime"
	"strconv"
	"sync/atomic"
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
	addr    = "127.0.0.1:6379"
	callers = 64
	keys    = 10000
)

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

// run calls decide from 64 goroutines, each over its own run of keys, and
// reports decisions/s and commands per decision.
func run(b *testing.B, h *counter, decide func(ctx context.Context, key string) (bool, error), names []string) {
	b.Helper()
	b.SetParallelism((callers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	var seq atomic.Int64
	before := h.n.Load()
	b.ResetTimer()
	start := time.Now()
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
	el := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/el.Seconds(), "decisions/s")
	b.ReportMetric(float64(h.n.Load()-before)/float64(b.N), "redis-cmds/op")
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
	make func(b *testing.B, c *goredis.Client, limit int64) func(ctx context.Context, key string) (bool, error)
}

func ours(mode redisstore.Pipelining) func(b *testing.B, c *goredis.Client, limit int64) func(context.Context, string) (bool, error) {
	return func(b *testing.B, c *goredis.Client, limit int64) func(context.Context, string) (bool, error) {
		// The peers have no deadline but go-redis's 3s read timeout; the
		// store gets the same, so a loaded machine measures speed, not
		// the failure policy.
		s, err := redisstore.New(c, redisstore.WithPipelining(mode), redisstore.WithTimeout(3*time.Second),
			redisstore.WithPrefix("bench:"+strconv.FormatInt(time.Now().UnixNano(), 36)+":"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		l, err := limiter.New(limiter.MustPolicy("bench", limiter.PerHour(limit)), limiter.WithStore(s))
		if err != nil {
			b.Fatal(err)
		}
		return func(ctx context.Context, key string) (bool, error) {
			d, err := l.Allow(ctx, key, 1)
			return d.Allowed, err
		}
	}
}

var contenders = []contender{
	{"fixedwindow_batch", ours(redisstore.Batch)},
	{"fixedwindow_plain", ours(redisstore.Plain)},
	{"fixedwindow_autopipeline", ours(redisstore.AutoPipeline)},
	{"redis_rate", func(b *testing.B, c *goredis.Client, limit int64) func(context.Context, string) (bool, error) {
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.PerHour(int(limit))
		return func(ctx context.Context, key string) (bool, error) {
			r, err := l.Allow(ctx, key, lim)
			if err != nil {
				return false, err
			}
			return r.Allowed > 0, nil
		}
	}},
	{"ulule", func(b *testing.B, c *goredis.Client, limit int64) func(context.Context, string) (bool, error) {
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
// one needs Redis.
func BenchmarkAdmit(b *testing.B) {
	for _, ct := range contenders {
		b.Run(ct.name, func(b *testing.B) {
			c, h := client(b)
			decide := ct.make(b, c, 1<<30)
			run(b, h, decide, keyNames("admit-"+strconv.FormatInt(time.Now().UnixNano(), 36)+"-"))
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
			run(b, h, decide, names[:1000])
		})
	}
}
