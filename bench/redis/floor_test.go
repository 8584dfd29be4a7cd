package redis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	goredis "github.com/redis/go-redis/v9"
)

// A shape is one form of policy the store and the floor are measured on:
// whose clock places requests, and one window (an hour) or two (an hour
// and a minute, every request charged to both).
type shape struct {
	name    string
	server  bool // redisstore.WithServerClock: Redis's TIME
	layered bool
}

var shapes = []shape{
	{"app", false, false},
	{"server", true, false},
	{"app-layered", false, true},
	{"server-layered", true, true},
}

// rates returns the shape's rates, each limit at limit.
func (sh shape) rates(limit int64) []limiter.Rate {
	r := []limiter.Rate{limiter.PerHour(limit)}
	if sh.layered {
		r = append(r, limiter.PerMinute(limit))
	}
	return r
}

// A shapedContender runs on every shape.
type shapedContender struct {
	name string
	make func(b *testing.B, c goredis.UniversalClient, sh shape, limit int64) func(ctx context.Context, key string) (bool, error)
}

// shaped are the store and its floor, run side by side on every shape.
var shaped = []shapedContender{
	{"fixedwindow", oursShaped},
	{"floor", floor},
}

// runShaped runs every shaped contender on every shape, each on a fresh
// client from newClient, over the first n of a fresh run of key names.
func runShaped(b *testing.B, prefix string, n int, newClient func(b *testing.B) (goredis.UniversalClient, *counter)) {
	for _, ct := range shaped {
		b.Run(ct.name, func(b *testing.B) {
			for _, sh := range shapes {
				b.Run(sh.name, func(b *testing.B) {
					c, h := newClient(b)
					decide := ct.make(b, c, sh, 1<<30)
					names := keyNames(prefix + strconv.FormatInt(time.Now().UnixNano(), 36) + "-")
					run(b, c, h, decide, names[:n])
				})
			}
		})
	}
}

// floorScript is the least a fixed-window limiter can ask of Redis for a
// batch of requests of cost 1 under one policy: one MGET of every key
// (on a Cluster node, one per request: an MGET may not cross slots),
// then per request, if every window has room, an INCRBY of each key or
// a SET with PX for a key not found. No check of what it reads, no
// expiry repair, no leases, one integer per request in the reply.
//
// ARGV: clock ("a" or "s": then the window id is read from TIME and
// appended to each key), now ms, expiry margin ms, nk (0: the keys are
// KEYS; else the number of keys in ARGV after the rates: a node call),
// n windows, n pairs of limit and window ms, then the nk keys.
var floorScript = goredis.NewScript(`
local server = ARGV[1] == 's'
local now = tonumber(ARGV[2])
local margin = tonumber(ARGV[3])
local nk = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
if server then
  local t = redis.call('TIME')
  now = t[1] * 1000 + math.floor(t[2] / 1000)
end
local lim, ttl, id = {}, {}, {}
for i = 1, n do
  local w = tonumber(ARGV[5 + 2 * i])
  lim[i] = tonumber(ARGV[4 + 2 * i])
  local wid = math.floor(now / w)
  ttl[i] = (wid + 1) * w - now + margin
  id[i] = ':' .. wid
end
local K, first, total = KEYS, 1, #KEYS
if nk > 0 then
  K, first, total = ARGV, 6 + 2 * n, nk
end
if server then
  local named = {}
  for j = 0, total - 1 do
    named[j + 1] = K[first + j] .. id[j % n + 1]
  end
  K, first = named, 1
end
local vals, base
if nk == 0 then
  vals, base = redis.call('MGET', unpack(K, first, first + total - 1)), first
end
local out = {}
for r = 0, total / n - 1 do
  local at = first + r * n
  if nk > 0 then
    vals, base = redis.call('MGET', unpack(K, at, at + n - 1)), at
  end
  local ok = 1
  for i = 1, n do
    if (tonumber(vals[at + i - base]) or 0) + 1 > lim[i] then
      ok = 0
    end
  end
  if ok == 1 then
    for i = 1, n do
      if vals[at + i - base] then
        redis.call('INCRBY', K[at + i - 1], 1)
      else
        redis.call('SET', K[at + i - 1], 1, 'PX', ttl[i])
      end
    end
  end
  out[r + 1] = ok
end
return out
`)

// floor decides with floorScript, batched as the store batches (its
// defaults): a decision that finds fewer than 2 rounds running starts
// one, or fewer than 4 while 64 decisions are queued; the others queue,
// and each round takes up to 64 queued decisions, one call per server (on
// a Cluster, per master, keys in ARGV, the masters in parallel).
func floor(b *testing.B, c goredis.UniversalClient, sh shape, limit int64) func(context.Context, string) (bool, error) {
	ctx := context.Background()
	if err := floorScript.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	if cc, ok := c.(*goredis.ClusterClient); ok {
		if err := cc.ForEachMaster(ctx, func(ctx context.Context, n *goredis.Client) error {
			return floorScript.Load(ctx, n).Err()
		}); err != nil {
			b.Fatal(err)
		}
	}
	fb := &floorBatcher{c: c, size: 64, inFlight: 2, server: sh.server,
		prefix: "bench-floor:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}
	for _, r := range sh.rates(limit) {
		fb.rates = append(fb.rates, r.Limit, r.Window.Milliseconds())
	}
	b.Cleanup(fb.wg.Wait)
	return func(ctx context.Context, key string) (bool, error) {
		return fb.do(ctx, key)
	}
}

// floorBatcher is the store's batcher cut to the bone.
type floorBatcher struct {
	c              goredis.UniversalClient
	prefix         string
	server         bool
	rates          []int64 // limit, window ms, per window
	size, inFlight int

	mu      sync.Mutex
	queue   []*floorCall
	running int
	wg      sync.WaitGroup
}

type floorCall struct {
	key  string
	ok   bool
	err  error
	done chan struct{}
}

var floorCalls = sync.Pool{New: func() any { return &floorCall{done: make(chan struct{}, 1)} }}

func (fb *floorBatcher) do(ctx context.Context, key string) (bool, error) {
	fc := floorCalls.Get().(*floorCall)
	fc.key = key
	fb.mu.Lock()
	fb.queue = append(fb.queue, fc)
	start := fb.running < fb.inFlight || fb.running < 2*fb.inFlight && len(fb.queue) >= fb.size
	if start {
		fb.running++
		fb.wg.Add(1)
	}
	fb.mu.Unlock()
	if start {
		go fb.loop()
	}
	<-fc.done
	ok, err := fc.ok, fc.err
	floorCalls.Put(fc)
	return ok, err
}

func (fb *floorBatcher) loop() {
	defer fb.wg.Done()
	var batch []*floorCall
	for {
		fb.mu.Lock()
		n := min(len(fb.queue), fb.size)
		if n == 0 {
			fb.running--
			fb.mu.Unlock()
			return
		}
		batch = append(batch[:0], fb.queue[:n]...)
		rest := copy(fb.queue, fb.queue[n:])
		clear(fb.queue[rest:])
		fb.queue = fb.queue[:rest]
		fb.mu.Unlock()
		fb.round(batch)
		for _, fc := range batch {
			fc.done <- struct{}{}
		}
	}
}

// round decides batch: one call on a single node, one per master on a
// Cluster, in parallel.
func (fb *floorBatcher) round(batch []*floorCall) {
	ctx := context.Background()
	cc, ok := fb.c.(*goredis.ClusterClient)
	if !ok {
		fb.call(ctx, fb.c, batch, false)
		return
	}
	groups := map[*goredis.Client][]*floorCall{}
	for _, fc := range batch {
		m, err := cc.MasterForKey(ctx, "{"+fc.key+"}")
		if err != nil {
			fc.ok, fc.err = false, err
			continue
		}
		groups[m] = append(groups[m], fc)
	}
	var wg sync.WaitGroup
	for m, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fb.call(ctx, m, g, true)
		}()
	}
	wg.Wait()
}

// call sends one floorScript call deciding calls to p; node passes the
// keys in ARGV.
func (fb *floorBatcher) call(ctx context.Context, p goredis.Scripter, calls []*floorCall, node bool) {
	nw := len(fb.rates) / 2
	now := time.Now().UnixMilli()
	keys := make([]string, 0, len(calls)*nw)
	for _, fc := range calls {
		for i := range nw {
			k := fb.prefix + "{" + fc.key + "}:floor:" + strconv.FormatInt(fb.rates[2*i+1], 10)
			if !fb.server {
				k += ":" + strconv.FormatInt(now/fb.rates[2*i+1], 10)
			}
			keys = append(keys, k)
		}
	}
	clock := "a"
	if fb.server {
		clock = "s"
	}
	args := []any{clock, now, 2000, 0, nw}
	for _, r := range fb.rates {
		args = append(args, r)
	}
	declared := keys
	if node {
		args[3] = len(keys)
		for _, k := range keys {
			args = append(args, k)
		}
		declared = nil
	}
	v, err := floorScript.EvalSha(ctx, p, declared, args...).Int64Slice()
	if err == nil && len(v) != len(calls) {
		err = errors.New("floor: " + strconv.Itoa(len(v)) + " results for " + strconv.Itoa(len(calls)) + " requests")
	}
	for i, fc := range calls {
		fc.ok, fc.err = err == nil && v[i] == 1, err
	}
}
