package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestLeaseDecisionBeforeAResetReturnsNothing: under WithServerClock a
// replica decides from its lease, another replica then resets the key,
// and the first refunds that decision once its lease has ended (so the
// refund goes to Redis). The decision was made before the Reset, in
// Redis's millisecond of it: the refund returns nothing into the fresh
// count. Redis's TIME and the replica's monotonic clock are the test's,
// a microsecond apiece, half a millisecond out of phase, as two real
// clocks are. Before, a lease's decisions were dated by t + ms - now in
// whole milliseconds, which runs up to a millisecond ahead of Redis's
// clock: the decision, made at Redis's W+0.6 ms, was dated W+1, after
// the Reset's mark (W+0.7, marked W), and its refund returned a unit
// into the count B had charged since (4 used of 5, the budget grown by
// one).
func TestLeaseDecisionBeforeAResetReturnsNothing(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("plan", limiter.PerHour(100)) // a lease's cap: 10
	prefix := testPrefix(t)
	clock := newFakeTime(t)
	mk := func(opts ...Option) *Store {
		c := redistest.Client(t, redistest.SharedAddr)
		c.AddHook(clock)
		return newStore(t, c, append([]Option{WithPrefix(prefix), withClockSource(serverClock)}, opts...)...)
	}
	a, b := mk(WithLeases(500*time.Millisecond, 10)), mk()
	monoA, monoB := fakeMono(a), fakeMono(b)
	// Redis's clock: 10 minutes into the hour Redis is in, whose end
	// (the counts expire at it, PXAT) is still ahead of its real clock.
	w := serverTime(t, sharedClient(t)).Truncate(time.Hour).Add(10 * time.Minute)
	// at sets both clocks x after w: Redis's at w + x, the replicas'
	// monotonic ones at 100.5 ms + x.
	at := func(x time.Duration) time.Time {
		clock.set(t, w.Add(x))
		mono := int64(100*time.Millisecond + 500*time.Microsecond + x)
		monoA.Store(mono)
		monoB.Store(mono)
		return w.Add(x)
	}
	take := func(s *Store, x time.Duration, cost int64, peek bool) limiter.Decision {
		t.Helper()
		d, err := s.Take(ctx, limiter.Request{Key: "acme", Policy: p, Now: at(x), Cost: cost, Peek: peek})
		if err != nil || !d.Allowed {
			t.Fatalf("at w%+v: %+v, %v", x, d, err)
		}
		return d
	}
	// A hot on whole milliseconds up to w: it holds a lease.
	for ms := -9; ms <= 0; ms++ {
		take(a, time.Duration(ms)*time.Millisecond, 1, false)
	}
	if a.leases.held(p, "acme") == 0 {
		t.Fatal("A holds no lease: the test needs one")
	}
	leased := a.Stats().Leased
	d := take(a, 600*time.Microsecond, 1, false)
	if a.Stats().Leased != leased+1 {
		t.Fatal("A's decision at w+0.6 ms went to Redis: the test needs one from its lease")
	}
	at(700 * time.Microsecond)
	if err := b.Reset(ctx, "acme", p, w); err != nil {
		t.Fatal(err)
	}
	take(b, time.Millisecond, 5, false)
	// A second and more later A's lease has ended: its refund goes to
	// Redis, which judges it by the Reset's mark.
	if err := a.Refund(ctx, limiter.Request{Key: "acme", Policy: p, Now: at(1500 * time.Millisecond), Cost: 1}, d); err != nil {
		t.Fatal(err)
	}
	peek := take(b, 1500*time.Millisecond, 1, true)
	if used := peek.WindowAt(0).Used - 1; used != 5 {
		t.Fatalf("after B charged 5 since the Reset and A refunded a decision made before it (dated %s, the Reset at %s): %d used, want 5",
			d.DecidedAt().Sub(w), 700*time.Microsecond, used)
	}
}

// TestLeaseEndsBeforeRedisLeavesItsWindow: under WithServerClock a
// lease decides only while Redis's clock is in the lease's windows. The
// replica's monotonic clock ticks 0.1 ms after Redis's; its lease was
// granted by Redis's readings at 0.95 ms into their milliseconds. Before,
// the span ended at t + ms - tk.t in whole milliseconds, up to a
// millisecond late: at Redis's E+0.5 ms, in the next hour, the lease
// still decided in the hour before.
func TestLeaseEndsBeforeRedisLeavesItsWindow(t *testing.T) {
	ctx := context.Background()
	p := limiter.MustPolicy("plan", limiter.PerHour(100))
	clock := newFakeTime(t)
	c := redistest.Client(t, redistest.SharedAddr)
	c.AddHook(clock)
	s := newStore(t, c, withClockSource(serverClock), WithLeases(5*time.Millisecond, 10))
	mono := fakeMono(s)
	// Redis's clock about E, an hour's end still ahead of its real one.
	e := serverTime(t, sharedClient(t)).Truncate(time.Hour).Add(time.Hour)
	take := func(x time.Duration) limiter.Decision {
		t.Helper()
		clock.set(t, e.Add(x))
		mono.Store(int64(100*time.Millisecond + 100*time.Microsecond + x))
		d, err := s.Take(ctx, limiter.Request{Key: "acme", Policy: p, Now: e.Add(x), Cost: 1})
		if err != nil || !d.Allowed {
			t.Fatalf("at E%+v: %+v, %v", x, d, err)
		}
		return d
	}
	for x := -20050 * time.Microsecond; x < -time.Millisecond; x += time.Millisecond {
		take(x)
	}
	if s.leases.held(p, "acme") == 0 {
		t.Fatal("no lease held: the test needs one")
	}
	if d := take(500 * time.Microsecond); d.DecidedAt().Before(e) {
		t.Fatalf("at Redis's E+0.5 ms: decided at E%+v (leased %d), in the hour before", d.DecidedAt().Sub(e), s.Stats().Leased)
	}
}

// A fakeTime makes the store's scripts read TIME from the test's clock
// instead of Redis's: each EVALSHA of one goes as EVAL of its source,
// redis.call('TIME') replaced by a read of the test's key, which set
// moves (to the microsecond). One source per script and test, so that
// Redis's script cache grows by a few entries per run.
type fakeTime struct {
	key     string
	c       *redis.Client
	sources map[string]string // the rewritten scripts by the hash of their source
}

func newFakeTime(t *testing.T) *fakeTime {
	f := &fakeTime{key: testPrefix(t) + "time", c: sharedClient(t), sources: map[string]string{}}
	now := fmt.Sprintf("{string.match(redis.call('GET', '%s'), '^(%%d+) (%%d+)$')}", f.key)
	for _, src := range []string{takeSource, refundSource, settleSource, resetSource, slotSource} {
		f.sources[redis.NewScript(src).Hash()] = strings.ReplaceAll(src, "redis.call('TIME')", now)
	}
	return f
}

// set makes the scripts' TIME read at.
func (f *fakeTime) set(t *testing.T, at time.Time) {
	t.Helper()
	us := at.UnixMicro()
	if err := f.c.Set(context.Background(), f.key, fmt.Sprintf("%d %d", us/1e6, us%1e6), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeTime) rewrite(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 || cmd.Name() != "evalsha" {
		return
	}
	if src, ok := f.sources[fmt.Sprint(args[1])]; ok {
		args[0], args[1] = "eval", src
	}
}

func (*fakeTime) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f *fakeTime) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		f.rewrite(cmd)
		return next(ctx, cmd)
	}
}

func (f *fakeTime) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			f.rewrite(c)
		}
		return next(ctx, cmds)
	}
}
