package redisstore

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/captest"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/redis/go-redis/v9"
)

// newCap returns a cap of max named name on s, closed when the test ends.
func newCap(t testing.TB, s *Store, name string, max int64, opts ...limiter.Option) *limiter.InFlight {
	t.Helper()
	f, err := limiter.NewInFlight(name, max, append([]limiter.Option{limiter.WithStore(s)}, opts...)...)
	if err != nil {
		t.Fatalf("limiter.NewInFlight: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// take calls f.Acquire and fails the test on an error.
func take(t testing.TB, f *limiter.InFlight, key string) (limiter.Decision, func()) {
	t.Helper()
	d, release, err := f.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire(%q): %v", key, err)
	}
	return d, release
}

// zcard returns how many slots Redis holds for key under f's cap on s.
func zcard(t testing.TB, c redis.UniversalClient, s *Store, f *limiter.InFlight, key string) int64 {
	t.Helper()
	n, err := c.ZCard(context.Background(), slotKey(s.cfg.prefix, key, f.Policy())).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// slotClients are the kinds of client slots are tested on: one node, a
// Cluster (node calls per master), a Ring (one call per shard), and the
// Plain path (a call per request, routed by the client).
func slotClients(t *testing.T) []struct {
	name string
	c    redis.UniversalClient
	opts []Option
} {
	ring, _ := startRing(t, 2, time.Hour)
	return []struct {
		name string
		c    redis.UniversalClient
		opts []Option
	}{
		{"node", sharedClient(t), nil},
		{"cluster", redistest.SharedCluster(t).Client(t), nil},
		{"ring", ring, nil},
		{"plain", sharedClient(t), []Option{withPath(pathPlain)}},
	}
}

// Slots are taken up to the cap and given back, per key, on every kind
// of client; a key that holds none holds no Redis key.
func TestInFlightSlotsOnEveryClient(t *testing.T) {
	for _, tc := range slotClients(t) {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, tc.c, tc.opts...)
			f := newCap(t, s, "exports", 2)
			keys := make([]string, 24) // over every master and shard
			for i := range keys {
				keys[i] = "client-" + strconv.Itoa(i)
			}
			var releases []func()
			var wg sync.WaitGroup
			var mu sync.Mutex
			for _, k := range keys {
				for range 3 { // concurrently: one round carries many
					wg.Go(func() {
						d, release := take(t, f, k)
						mu.Lock()
						defer mu.Unlock()
						if release != nil {
							releases = append(releases, release)
						}
						if d.Limit != 2 {
							t.Errorf("%s: limit %d, want 2", k, d.Limit)
						}
					})
				}
			}
			wg.Wait()
			if len(releases) != 2*len(keys) {
				t.Fatalf("%d slots taken, want 2 per key: %d", len(releases), 2*len(keys))
			}
			for _, k := range keys {
				if n := zcard(t, tc.c, s, f, k); n != 2 {
					t.Fatalf("%s: Redis holds %d slots, want 2", k, n)
				}
				if u, err := f.Usage(context.Background(), k); err != nil || u.Held != 2 {
					t.Fatalf("%s: Usage %+v, %v; want 2 held", k, u, err)
				}
				if d, _ := take(t, f, k); d.Allowed || d.Remaining != 0 || d.RetryAfter < time.Second {
					t.Fatalf("%s at its cap: %+v, want refused, none left, a retry of at least 1s", k, d)
				}
			}
			if st := s.Stats(); st.SlotsHeld != 2*len(keys) || s.path != pathPlain && st.RoundTrips >= uint64(4*len(keys)) {
				t.Fatalf("stats %+v: want %d slots held, fewer round trips than calls (but on the Plain path)", st, 2*len(keys))
			}
			for _, r := range releases {
				r()
				r() // harmless
			}
			for _, k := range keys {
				if n, err := tc.c.Exists(context.Background(), slotKey(s.cfg.prefix, k, f.Policy())).Result(); err != nil || n != 0 {
					t.Fatalf("%s after its releases: %d keys (%v), want none", k, n, err)
				}
			}
			if st := s.Stats(); st.SlotsHeld != 0 {
				t.Fatalf("after the releases: %d slots held, want 0", st.SlotsHeld)
			}
			if u, err := f.Usage(context.Background(), keys[0]); err != nil || u.Held != 0 {
				t.Fatalf("Usage after the releases: %+v, %v; want 0 held", u, err)
			}
		})
	}
}

// Exactly max handlers at once under 64 clients, across two replicas,
// each with a store of its own, on one Redis and on a Cluster.
func TestInFlightReplicasExactlyMax(t *testing.T) {
	const max = 5
	for _, tc := range []struct {
		name   string
		client func() redis.UniversalClient
	}{
		{"one_redis", func() redis.UniversalClient { return redistest.Client(t, redistest.SharedAddr) }},
		{"cluster", func() redis.UniversalClient { return redistest.SharedCluster(t).Client(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := captest.NewGate(max)
			prefix := testPrefix(t)
			var urls []string
			var caps []*limiter.InFlight
			for range 2 {
				s, err := New(tc.client(), WithPrefix(prefix), WithTimeout(5*time.Second))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				f := newCap(t, s, "exports", max)
				caps = append(caps, f)
				l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(1_000_000)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				mw, err := middleware.New(l, middleware.WithInFlight(f, nil))
				if err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(mw(g))
				t.Cleanup(srv.Close)
				urls = append(urls, srv.URL)
			}
			captest.Check(t, g, max, captest.Hammer(t, g, urls, 64, 10))
			for _, f := range caps {
				if d, release := take(t, f, "127.0.0.1"); !d.Allowed || d.Remaining != max-1 {
					t.Fatalf("after the run: %+v, want every slot back", d)
				} else {
					release()
				}
			}
		})
	}
}

// A request three leases long keeps its slot throughout, renewed in the
// background; the replica beside it is refused until it ends.
func TestInFlightLongRequestKeepsItsSlot(t *testing.T) {
	c := sharedClient(t)
	prefix := testPrefix(t)
	stores := [2]*Store{}
	for i := range stores {
		stores[i] = newStore(t, c, WithPrefix(prefix))
	}
	lease := time.Second
	a := newCap(t, stores[0], "long", 1, limiter.WithInFlightLease(lease))
	b := newCap(t, stores[1], "long", 1, limiter.WithInFlightLease(lease))
	start := serverTime(t, c)
	d, release := take(t, a, "k")
	if !d.Allowed {
		t.Fatal("the first request was refused")
	}
	for at := start; at.Before(start.Add(3*lease + lease/4)); at = at.Add(lease / 4) {
		awaitServerTime(t, c, at)
		if d, r := take(t, b, "k"); d.Allowed {
			r()
			t.Fatalf("%v into a request three leases long: the other replica took its slot", at.Sub(start))
		}
	}
	st := stores[0].Stats()
	if st.Renewals < 3*4-2 || st.SlotsLost != 0 || st.SlotsHeld != 1 {
		t.Fatalf("stats %+v: want a renewal about every quarter lease (at least 10 in 3.25 leases), none lost", st)
	}
	release()
	if d, r := take(t, b, "k"); !d.Allowed {
		t.Fatal("after the long request ended: refused")
	} else {
		r()
	}
}

// A slot whose lease ran out (Redis away for a lease, say) and whose
// place another took is lost by its renewal: the cap holds, one slot
// in Redis. With room, the renewal takes it again.
func TestInFlightRenewalNeverExceedsTheCap(t *testing.T) {
	c := sharedClient(t)
	prefix := testPrefix(t)
	sa, sb := newStore(t, c, WithPrefix(prefix)), newStore(t, c, WithPrefix(prefix))
	a, b := newCap(t, sa, "race", 1), newCap(t, sb, "race", 1)
	key := slotKey(prefix, "k", a.Policy())
	expire := func() {
		t.Helper()
		members, err := c.ZRange(context.Background(), key, 0, -1).Result()
		if err != nil || len(members) != 1 {
			t.Fatalf("slots %v (%v), want one", members, err)
		}
		// Its lease ends now, as after Redis was away for a lease.
		if err := c.ZAdd(context.Background(), key, redis.Z{Score: 1, Member: members[0]}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Each pass renews as if an hour had passed since the one before.
	hours := time.Duration(0)
	renewAll := func(s *Store) {
		hours += time.Hour
		s.held.renew(time.Now().Add(hours))
	}

	_, ra := take(t, a, "k")
	expire()
	renewAll(sa) // room: taken again
	if st := sa.Stats(); st.SlotsLost != 0 || st.SlotsHeld != 1 || zcard(t, c, sa, a, "k") != 1 {
		t.Fatalf("renewal with room: stats %+v, want the slot taken again", st)
	}
	expire()
	d, rb := take(t, b, "k") // the other replica takes the place
	if !d.Allowed {
		t.Fatal("the expired slot's place was not free")
	}
	renewAll(sa)
	if st := sa.Stats(); st.SlotsLost != 1 || st.SlotsHeld != 0 {
		t.Fatalf("renewal of a slot whose place is taken: stats %+v, want it lost", st)
	}
	if n := zcard(t, c, sa, a, "k"); n != 1 {
		t.Fatalf("Redis holds %d slots of a cap of 1", n)
	}
	ra() // gives back nothing: the slot is b's
	if n := zcard(t, c, sa, a, "k"); n != 1 {
		t.Fatalf("the lost slot's release took another's: %d held", n)
	}
	rb()
}

// A hold or a release sent twice, as a Cluster's resend or a retry
// would, counts once: the token makes both idempotent.
func TestInFlightCallsAreIdempotent(t *testing.T) {
	c := sharedClient(t)
	s := newStore(t, c)
	p := newCap(t, s, "twice", 5).Policy()
	op := slotOp{op: opHold, key: slotKey(s.cfg.prefix, "k", p), member: "m-1", most: 5, leaseMs: 10_000}
	ctx := context.Background()
	for i, want := range []int64{1, 2, 2} {
		r, err := s.slotBatch.doSlot(ctx, "k", p, op, farDeadline)
		if err != nil || r.granted != want || r.counts[0] != 1 {
			t.Fatalf("hold %d: verdict %d held %d (%v), want %d and 1", i+1, r.granted, r.counts[0], err, want)
		}
	}
	op.op = opRelease
	for i, want := range []int64{1, 0} {
		r, err := s.slotBatch.doSlot(ctx, "k", p, op, farDeadline)
		if err != nil || r.granted != want || r.counts[0] != 0 {
			t.Fatalf("release %d: verdict %d held %d (%v), want %d and 0", i+1, r.granted, r.counts[0], err, want)
		}
	}
}

// A hold whose reply was lost after Redis ran it is given back in the
// background, once it can no longer be running.
func TestInFlightLostReplyGivenBack(t *testing.T) {
	p := redistest.StartProxy(t, redistest.SharedAddr)
	c := redistest.Client(t, p.Addr())
	s := newStore(t, c, WithTimeout(200*time.Millisecond))
	f := newCap(t, s, "lost", 1, limiter.WithInFlightLease(time.Minute))
	if err := c.Ping(context.Background()).Err(); err != nil { // a connection in the pool
		t.Fatal(err)
	}
	p.DropReplies(1)
	if _, _, err := f.Acquire(context.Background(), "k"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a hold whose reply was lost: %v, want ErrUnavailable", err)
	}
	direct := sharedClient(t)
	if n := zcard(t, direct, s, f, "k"); n != 1 {
		t.Fatalf("Redis holds %d slots, want the one the lost hold took", n)
	}
	if !await(5*time.Second, func() bool { return zcard(t, direct, s, f, "k") == 0 }) {
		t.Fatal("the lost hold's slot was not given back within 5 s (its lease is a minute)")
	}
}

// When Redis is away: fail closed by default, WithFailOpen admits with a
// slot charged to nothing, WithFailLocal decides at a local cap of
// max/divisor.
func TestInFlightFailurePolicy(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	closed := newStore(t, c, WithTimeout(200*time.Millisecond), WithBreaker(1000, time.Hour))
	open := newStore(t, c, WithTimeout(200*time.Millisecond), WithFailOpen())
	local := newStore(t, c, WithTimeout(200*time.Millisecond), WithFailLocal(2))
	srv.Kill()
	ctx := context.Background()

	_, _, err := newCap(t, closed, "exports", 4).Acquire(ctx, "k")
	if !errors.Is(err, ErrUnavailable) || reasonOf(err) == "" {
		t.Fatalf("fail closed: %v, want ErrUnavailable with a reason", err)
	}

	fo := newCap(t, open, "exports", 4)
	d, release, err := fo.Acquire(ctx, "k")
	if err != nil || !d.Allowed || d.Limit != 4 {
		t.Fatalf("fail open: %+v, %v, want admitted under the cap of 4", d, err)
	}
	release()
	if st := open.Stats(); st.Degraded != 1 || st.SlotsHeld != 0 {
		t.Fatalf("fail open: stats %+v, want one degraded, no slot held", st)
	}

	fl := newCap(t, local, "exports", 4)
	var releases []func()
	for i := range 3 {
		d, r, err := fl.Acquire(ctx, "k")
		if err != nil || d.Allowed != (i < 2) || d.Limit != 2 || d.Policy.MaxInFlight() != 2 || d.Policy.Name() != "exports" {
			t.Fatalf("fail local, request %d: %+v, %v: want the local cap of 2 (4/2)", i+1, d, err)
		}
		if r != nil {
			releases = append(releases, r)
		}
	}
	for _, r := range releases {
		r()
	}
	if d, r := take(t, fl, "k"); !d.Allowed {
		t.Fatal("fail local: the local slots were not given back")
	} else {
		r()
	}
}

// The application's clock judges nothing: a clock stepped by a year
// frees no slot.
func TestInFlightClockStepFreesNothing(t *testing.T) {
	c := sharedClient(t)
	prefix := testPrefix(t)
	clk := limitertest.New(t0)
	a := newCap(t, newStore(t, c, WithPrefix(prefix)), "steps", 1, limiter.WithClock(clk))
	b := newCap(t, newStore(t, c, WithPrefix(prefix)), "steps", 1, limiter.WithClock(clk))
	_, release := take(t, a, "k")
	defer release()
	for _, step := range []time.Duration{365 * 24 * time.Hour, -2 * 365 * 24 * time.Hour} {
		clk.Advance(step)
		if d, _ := take(t, b, "k"); d.Allowed {
			t.Fatalf("after a clock step of %v: a second slot of a cap of 1", step)
		}
	}
}

// After Close a store takes no slot; those it held are left to their
// leases, and a release is harmless.
func TestInFlightAfterClose(t *testing.T) {
	c := sharedClient(t)
	s, err := New(c, WithPrefix(testPrefix(t)))
	if err != nil {
		t.Fatal(err)
	}
	f := newCap(t, s, "closing", 1)
	_, release := take(t, f, "k")
	s.Close()
	release()
	if _, r, err := f.Acquire(context.Background(), "k"); !errors.Is(err, limiter.ErrClosed) || r != nil {
		t.Fatalf("Acquire after Close: %v, want ErrClosed", err)
	}
	if n := zcard(t, c, s, f, "k"); n != 1 {
		t.Fatalf("Redis holds %d slots, want the one left to its lease", n)
	}
}

// A flushed script cache is loaded again (EVAL on NOSCRIPT).
func TestInFlightNoScript(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	f := newCap(t, newStore(t, c), "flushed", 1)
	if err := c.ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if d, r := take(t, f, "k"); !d.Allowed {
		t.Fatal("refused after SCRIPT FLUSH")
	} else {
		r()
	}
}

func TestInFlightCheckSlot(t *testing.T) {
	s := newStore(t, sharedClient(t))
	capP := newCap(t, s, "checks", 1).Policy()
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  limiter.SlotRequest
		want error
	}{
		{"rate_policy", limiter.SlotRequest{Key: "k", Policy: limiter.MustPolicy("r", limiter.PerMinute(1)), Max: 1, Lease: time.Second}, limiter.ErrInvalidPolicy},
		{"max_zero", limiter.SlotRequest{Key: "k", Policy: capP, Max: 0, Lease: time.Second}, limiter.ErrInvalidPolicy},
		{"empty_key", limiter.SlotRequest{Policy: capP, Max: 1, Lease: time.Second}, limiter.ErrInvalidKey},
		{"short_lease", limiter.SlotRequest{Key: "k", Policy: capP, Max: 1, Lease: time.Millisecond}, limiter.ErrInvalidOption},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.AcquireSlot(ctx, tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSlotReplyParse(t *testing.T) {
	for _, tc := range []struct {
		name  string
		raw   string
		n     int
		node  bool
		err   bool
		allow []bool
	}{
		{"taken_and_refused", "*4\r\n:1\r\n:3\r\n:0\r\n:3\r\n", 2, false, false, []bool{true, false}},
		{"extended", "*2\r\n:2\r\n:1\r\n", 1, false, false, []bool{true}},
		{"elsewhere_in_a_node_call", "*2\r\n:-1\r\n:0\r\n", 1, true, false, []bool{false}},
		{"elsewhere_not_a_node_call", "*2\r\n:-1\r\n:0\r\n", 1, false, true, nil},
		{"verdict_out_of_range", "*2\r\n:3\r\n:0\r\n", 1, false, true, nil},
		{"negative_held", "*2\r\n:1\r\n:-2\r\n", 1, false, true, nil},
		{"foreign_value", "*4\r\n:0\r\n:-1\r\n:1\r\n:1\r\n", 2, false, false, []bool{false, true}},
		{"held_below_minus_one", "*2\r\n:0\r\n:-2\r\n", 1, false, true, nil},
		{"foreign_value_taken", "*2\r\n:1\r\n:-1\r\n", 1, false, true, nil},
		{"foreign_value_elsewhere", "*2\r\n:-1\r\n:-1\r\n", 1, true, true, nil},
		{"too_short", "*2\r\n:1\r\n:0\r\n", 2, false, true, nil},
		{"not_an_array", ":1\r\n", 1, false, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &scriptCall{reply: replyReader{raw: []byte(tc.raw)}, res: make([]result, tc.n)}
			err := slotScript{}.parse(sc, tc.node)
			if (err != nil) != tc.err || err != nil && !errors.Is(err, ErrBadReply) {
				t.Fatalf("got %v, want error %v (ErrBadReply)", err, tc.err)
			}
			for i, want := range tc.allow {
				if sc.res[i].allowed != want {
					t.Fatalf("result %d: allowed %v, want %v", i, sc.res[i].allowed, want)
				}
			}
		})
	}
}

// childEnv names the environment variable that makes
// TestInFlightKilledReplicaFreesSlots the replica it kills: the prefix to
// hold slots under.
const childEnv = "REDISSTORE_INFLIGHT_CHILD"

// A replica killed with kill -9 while holding slots gives them back
// within the lease, and not before its leases end: the test binary runs
// again as the replica, holds three slots with a 1s lease, and is killed.
func TestInFlightKilledReplicaFreesSlots(t *testing.T) {
	const lease = time.Second
	if prefix := os.Getenv(childEnv); prefix != "" {
		s, err := New(redistest.Shared(t), WithPrefix(prefix), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		f := newCap(t, s, "killed", 3, limiter.WithInFlightLease(lease))
		for range 3 {
			if d, _ := take(t, f, "k"); !d.Allowed {
				t.Fatal("child: refused")
			}
		}
		fmt.Println("held")
		select {} // until killed
	}
	c := sharedClient(t)
	prefix := testPrefix(t)
	child := exec.Command(os.Args[0], "-test.run=^TestInFlightKilledReplicaFreesSlots$", "-test.count=1")
	child.Env = append(os.Environ(), childEnv+"="+prefix)
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	held := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "held" {
				held <- true
				return
			}
		}
		held <- false
	}()
	select {
	case ok := <-held:
		if !ok {
			t.Fatal("the child ended without holding its slots")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not hold its slots within 30 s")
	}
	s := newStore(t, c, WithPrefix(prefix))
	f := newCap(t, s, "killed", 3, limiter.WithInFlightLease(lease))
	// Two leases on: the child has renewed its slots, which are still
	// its own.
	awaitServerTime(t, c, serverTime(t, c).Add(2*lease))
	if d, _ := take(t, f, "k"); d.Allowed {
		t.Fatal("a fourth slot of a cap of 3 while the child holds three")
	}
	if err := child.Process.Kill(); err != nil { // SIGKILL: kill -9
		t.Fatal(err)
	}
	_ = child.Wait()
	killed := serverTime(t, c)
	slots, err := c.ZRangeWithScores(context.Background(), slotKey(prefix, "k", f.Policy()), 0, -1).Result()
	if err != nil || len(slots) != 3 {
		t.Fatalf("after the kill: slots %v (%v), want the child's three", slots, err)
	}
	var last time.Time
	for _, z := range slots {
		end := time.UnixMilli(int64(z.Score))
		if !end.After(killed) || end.After(killed.Add(lease)) {
			t.Fatalf("a slot's lease ends at %v, %v after the kill: want within (0, %v]", end, end.Sub(killed), lease)
		}
		if end.After(last) {
			last = end
		}
	}
	if !await(3*lease, func() bool {
		d, release, err := f.Acquire(context.Background(), "k")
		if err == nil && d.Allowed {
			release()
		}
		return err == nil && d.Allowed
	}) {
		t.Fatalf("no slot back within %v of the kill", 3*lease)
	}
	if freed := serverTime(t, c); freed.After(last.Add(lease / 2)) {
		t.Fatalf("a slot came back %v after the kill, its lease having ended %v after it", freed.Sub(killed), last.Sub(killed))
	}
	// All three, once the last of their leases has ended: the child
	// renewed each slot on its own, so their ends may differ by the
	// renewals' spread (a loaded machine's milliseconds to tens of them).
	awaitServerTime(t, c, last.Add(time.Millisecond))
	for range 3 { // all three
		if d, _ := take(t, f, "k"); !d.Allowed {
			t.Fatal("not every slot of the killed child came back")
		}
	}
}

// Slots and decisions share a Cluster's breakers: a master that fails
// fails both.
func TestInFlightHealthIsPerServer(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	s := newStore(t, c, WithTimeout(200*time.Millisecond), WithBreaker(2, time.Hour))
	f := newCap(t, s, "health", 1)
	srv.Kill()
	for range 2 {
		if _, _, err := f.Acquire(context.Background(), "k"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Redis down: %v, want ErrUnavailable", err)
		}
	}
	if h := worst(s.Health()); h != Unavailable {
		t.Fatalf("after two failed slot calls: health %v, want the server's breaker open", h)
	}
	l := newLimiter(t, limiter.MustPolicy("p", limiter.PerMinute(1)), s, limitertest.New(t0))
	if _, err := l.Allow(context.Background(), "k", 1); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("a decision on the server slots opened the breaker of: %v, want ErrCircuitOpen", err)
	}
}

// A slot whose Cluster slot moves to another master while held keeps
// counting there: the node call finds the key elsewhere, charges nothing
// and the request is sent again to where it lives; the release and the
// renewals follow.
func TestInFlightClusterSlotMoved(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	c := cl.Client(t)
	s := newStore(t, c)
	if !isClusterRouter(s) {
		t.Fatal("want node calls per master")
	}
	f := newCap(t, s, "moving", 2)
	_, r1 := take(t, f, "mover")
	key := slotKey(s.cfg.prefix, "mover", f.Policy())
	slot := int(keySlot(key))
	from := cl.SlotOwner(t, slot)
	to := 0
	for i, n := range cl.Nodes {
		if n.Addr() != from {
			to = i
			break
		}
	}
	cl.MoveSlot(t, slot, to) // the store's slot map still names the old master
	d, r2 := take(t, f, "mover")
	if !d.Allowed || d.Remaining != 0 {
		t.Fatalf("after the move: %+v, want the second slot, none left (the first moved with the slot)", d)
	}
	if d, _ := take(t, f, "mover"); d.Allowed {
		t.Fatal("a third slot of a cap of 2 after the move")
	}
	s.held.renew(time.Now().Add(time.Hour)) // renewals reach the new master
	if st := s.Stats(); st.Resent == 0 || st.SlotsLost != 0 || st.Renewals != 2 {
		t.Fatalf("stats %+v: want calls sent again after the move, both slots renewed", st)
	}
	r1()
	r2()
	if n, err := c.Exists(ctx, key).Result(); err != nil || n != 0 {
		t.Fatalf("after both releases: %d keys (%v), want none", n, err)
	}
}
