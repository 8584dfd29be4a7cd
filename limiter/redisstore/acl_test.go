package redisstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// storeACL is the least a Redis ACL user needs to run the store, on keys
// ~<prefix>* only, as docs/redis.md quotes it. Redis checks the commands
// a script calls against the caller's ACL, each on its keys, so the
// script's own commands are listed beside EVALSHA.
var storeACL = struct {
	// Commands are needed on every kind of client: the script (EVALSHA,
	// and EVAL after NOSCRIPT), what it calls under either clock (TIME
	// under serverClock), Reset's DEL, and what inflight.lua calls for an
	// in-flight cap's slots (a sorted set per key). settle.lua calls
	// nothing more: its marker is a SET, a return an INCRBY of a negative
	// amount or a SET KEEPTTL.
	Commands []string
	// Setup is go-redis's connection setup beyond HELLO and AUTH (which
	// any user may send): CLIENT SETINFO, from Redis 7.2, names the
	// library. Refused, it is ignored by go-redis but logged in ACL LOG
	// on every new connection; Options.DisableIdentity drops it. A
	// server without it (7.0) refuses the rule: the tests add it only
	// where the server knows the command.
	Setup []string
	// Cluster is what a Cluster client needs beyond that: its slot map;
	// ASKING, which it sends before a command it follows by ASK (a slot
	// mid-migration: refused, the decision fails); and COMMAND, which it
	// reads for the commands' key positions (refused, it logs the error
	// and asks again later).
	Cluster []string
}{
	Commands: []string{"evalsha", "eval", "time", "mget", "exists", "pttl",
		"set", "incrby", "pexpire", "del",
		"zremrangebyscore", "zscore", "zadd", "zcard", "zrange", "zrem", "pexpireat", "zcount"},
	Setup:   []string{"client|setinfo"},
	Cluster: []string{"cluster|slots", "asking", "command"},
}

// aclRules returns the ACL SETUSER rules of a user allowed cmds on keys
// under prefix, with password pw.
func aclRules(prefix, pw string, cmds []string) []any {
	rules := []any{"reset", "on", ">" + pw, "~" + prefix + "*"}
	for _, c := range cmds {
		rules = append(rules, "+"+c)
	}
	return rules
}

// aclCommands returns storeACL's commands for a client of the server
// behind admin, with the Cluster's when cluster: Setup's only where the
// server has them.
func aclCommands(t *testing.T, admin *redis.Client, cluster bool) []string {
	t.Helper()
	cmds := slices.Clone(storeACL.Commands)
	for _, c := range storeACL.Setup {
		info, err := admin.Do(context.Background(), "COMMAND", "INFO", c).Slice()
		if err != nil {
			t.Fatalf("COMMAND INFO %s: %v", c, err)
		}
		if len(info) == 1 && info[0] != nil {
			cmds = append(cmds, c)
		}
	}
	if cluster {
		cmds = append(cmds, storeACL.Cluster...)
	}
	return cmds
}

// setACLUser creates (or replaces) user on the server behind admin and
// clears its ACL LOG.
func setACLUser(t *testing.T, admin *redis.Client, user string, rules []any) {
	t.Helper()
	ctx := context.Background()
	if err := admin.Do(ctx, append([]any{"ACL", "SETUSER", user}, rules...)...).Err(); err != nil {
		t.Fatalf("ACL SETUSER %s: %v", user, err)
	}
	if err := admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatalf("ACL LOG RESET: %v", err)
	}
}

// aclDenials returns what the server behind admin refused, from ACL LOG:
// "reason object" per entry (e.g. "command pexpire", "key x").
func aclDenials(t *testing.T, admin *redis.Client) []string {
	t.Helper()
	entries, err := admin.ACLLog(context.Background(), 100).Result()
	if err != nil {
		t.Fatalf("ACL LOG: %v", err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Reason+" "+e.Object)
	}
	return out
}

// aclScenario runs every command path of the store on client under clock:
// concurrent decisions on a layered policy (one exact budget), a Peek, a
// key found without expiry (repaired), leased decisions, a Reset, settles
// above and below their reservations, and an in-flight cap. It
// returns the first thing that went wrong; admin (the default user) reads
// and edits keys beside the store.
func aclScenario(client redis.UniversalClient, admin redis.UniversalClient, prefix string, clock clockSource) error {
	ctx := context.Background()
	clk := limitertest.New(time.Now())
	p := limiter.MustPolicy("acl", limiter.PerMinute(10), limiter.PerHour(100))
	open := func(opts ...Option) (*limiter.Limiter, *Store, error) {
		s, err := New(client, append([]Option{WithPrefix(prefix), WithTimeout(5 * time.Second), withClockSource(clock)}, opts...)...)
		if err != nil {
			return nil, nil, err
		}
		l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
		if err != nil {
			s.Close()
			return nil, nil, err
		}
		return l, s, nil
	}
	l, s, err := open()
	if err != nil {
		return err
	}
	defer s.Close()
	defer l.Close()

	// A fresh script cache: the first call is EVALSHA answered NOSCRIPT,
	// then EVAL.
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		return fmt.Errorf("admin SCRIPT FLUSH: %w", err)
	}
	const calls = 16
	errs := make(chan error, calls)
	admitted := make(chan bool, calls)
	for range calls {
		go func() {
			d, err := l.Allow(ctx, "many", 1)
			errs <- err
			admitted <- d.Allowed
		}()
	}
	n := 0
	for range calls {
		if err := <-errs; err != nil {
			return fmt.Errorf("Allow: %w", err)
		}
		if <-admitted {
			n++
		}
	}
	if n != 10 {
		return fmt.Errorf("%d concurrent calls under 10/min: got %d admitted, want 10", calls, n)
	}
	if d, err := l.Peek(ctx, "other", 1); err != nil || !d.Allowed || d.Remaining != 9 {
		return fmt.Errorf("Peek of a fresh key: got %+v, %v; want allowed with 9 remaining", d, err)
	}

	// A key found without expiry gets the one it should have had.
	if d, err := l.Allow(ctx, "bare", 1); err != nil || !d.Allowed {
		return fmt.Errorf("Allow(bare): got %v, %v", d.Allowed, err)
	}
	keys, err := keysLike(ctx, admin, prefix+"{bare}*")
	if err != nil || len(keys) != 2 {
		return fmt.Errorf("admin KEYS %s{bare}*: got %v, %v; want 2 keys", prefix, keys, err)
	}
	for _, k := range keys {
		if err := admin.Persist(ctx, k).Err(); err != nil {
			return fmt.Errorf("admin PERSIST: %w", err)
		}
	}
	if d, err := l.Allow(ctx, "bare", 1); err != nil || !d.Allowed || d.Remaining != 8 {
		return fmt.Errorf("Allow(bare) again: got %+v, %v; want allowed with 8 remaining", d, err)
	}
	for _, k := range keys {
		if ttl, err := admin.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			return fmt.Errorf("admin PTTL %s after the repair: got %v, %v; want > 0", k, ttl, err)
		}
	}

	// Reset forgets the spent key.
	if err := l.Reset(ctx, "many"); err != nil {
		return fmt.Errorf("Reset: %w", err)
	}
	if d, err := l.Allow(ctx, "many", 1); err != nil || !d.Allowed || d.Remaining != 9 {
		return fmt.Errorf("Allow after Reset: got %+v, %v; want allowed with 9 remaining", d, err)
	}

	// Leases: one replica asking for its key in turn until refused spends
	// every unit it leased, so it admits exactly the limit.
	ll, ls, err := open(WithLeases(defaultLeaseHorizon, 2))
	if err != nil {
		return err
	}
	defer ls.Close()
	defer ll.Close()
	n = 0
	for range 20 {
		d, err := ll.Allow(ctx, "leased", 1)
		if err != nil {
			return fmt.Errorf("leased Allow: %w", err)
		}
		if d.Allowed {
			n++
		}
	}
	if n != 10 || ls.Stats().Leased == 0 {
		return fmt.Errorf("20 leased calls under 10/min: got %d admitted, %d from a lease; want 10, some", n, ls.Stats().Leased)
	}

	// Settles (settle.lua): reserved 1, settled at 4; reserved 3, settled
	// at 1; then, a minute on (a window with no count yet, on the
	// limiter's clock), the first settled once more, at 3.
	r, err := l.Allow(ctx, "settled", 1)
	if err != nil || !r.Allowed {
		return fmt.Errorf("reserve 1: got %+v, %v", r, err)
	}
	if err := l.Settle(ctx, "settled", 1, 4, r); err != nil {
		return fmt.Errorf("Settle above the reservation: %w", err)
	}
	first := r
	if r, err = l.Allow(ctx, "settled", 3); err != nil || !r.Allowed {
		return fmt.Errorf("reserve 3: got %+v, %v", r, err)
	}
	if err := l.Settle(ctx, "settled", 3, 1, r); err != nil {
		return fmt.Errorf("Settle below the reservation: %w", err)
	}
	if u, err := l.Usage(ctx, "settled"); err != nil || u.Windows[0].Used != 5 {
		return fmt.Errorf("Usage after the settles: got %+v, %v; want 5 used", u, err)
	}
	// A refund (refund.lua), as WithCountIf and a cap's refusal send.
	charged, err := l.Allow(ctx, "settled", 2)
	if err != nil || !charged.Allowed {
		return fmt.Errorf("Allow 2: got %+v, %v", charged, err)
	}
	if err := l.Refund(ctx, "settled", 2, charged); err != nil {
		return fmt.Errorf("Refund: %w", err)
	}
	if u, err := l.Usage(ctx, "settled"); err != nil || u.Windows[0].Used != 5 {
		return fmt.Errorf("Usage after the refund: got %+v, %v; want 5 used", u, err)
	}
	clk.Advance(time.Minute)
	if err := l.Settle(ctx, "settled", 1, 3, first); err != nil {
		return fmt.Errorf("Settle in a window with no count: %w", err)
	}

	// An in-flight cap of 2: two slots taken, a third refused, one given
	// back and taken again.
	f, err := limiter.NewInFlight("acl-cap", 2, limiter.WithStore(s))
	if err != nil {
		return err
	}
	defer f.Close()
	var releases []func()
	for i := range 3 {
		d, release, err := f.Acquire(ctx, "capped")
		if err != nil || d.Allowed != (i < 2) {
			return fmt.Errorf("Acquire %d of a cap of 2: got %+v, %v", i+1, d, err)
		}
		if release != nil {
			releases = append(releases, release)
		}
	}
	if u, err := f.Usage(ctx, "capped"); err != nil || u.Held != 2 {
		return fmt.Errorf("Usage of a full cap: got %+v, %v; want 2 held", u, err)
	}
	releases[0]()
	d, release, err := f.Acquire(ctx, "capped")
	if err != nil || !d.Allowed {
		return fmt.Errorf("Acquire after a release: got %+v, %v; want a slot", d, err)
	}
	release()
	releases[1]()
	return nil
}

// TestACLLeastPrivilege runs the store under a Redis ACL user allowed
// exactly storeACL on its prefix, with either clock, leases and Reset,
// on one node and on a three-master Cluster (where ACL users are per
// node, so the user is made on each): every decision is exact and
// nothing is refused (ACL LOG stays empty). Then, one node, each command
// of storeACL.Commands taken away is refused: the list is the least.
func TestACLLeastPrivilege(t *testing.T) {
	const user, pw = "limiter", "acl-test-pw"
	clocks := []clockSource{appClock, serverClock}
	t.Run("single_node", func(t *testing.T) {
		srv := redistest.StartServer(t)
		admin := redistest.Client(t, srv.Addr())
		prefix := testPrefix(t)
		setACLUser(t, admin, user, aclRules(prefix, pw, aclCommands(t, admin, false)))
		client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: pw, ContextTimeoutEnabled: true})
		t.Cleanup(func() { client.Close() })
		for _, clock := range clocks {
			t.Run(clock.String(), func(t *testing.T) {
				if clock == serverClock {
					awaitServerWindow(t, admin, time.Minute)
				}
				if err := aclScenario(client, admin, prefix+clock.String()+":", clock); err != nil {
					t.Fatal(err)
				}
				if d := aclDenials(t, admin); len(d) > 0 {
					t.Fatalf("ACL LOG: got %v, want nothing refused", d)
				}
			})
		}
	})

	t.Run("each_command_needed", func(t *testing.T) {
		srv := redistest.StartServer(t)
		admin := redistest.Client(t, srv.Addr())
		all := aclCommands(t, admin, false)
		for _, cmd := range all {
			t.Run(strings.ReplaceAll(cmd, "|", "_"), func(t *testing.T) {
				prefix := testPrefix(t)
				rules := aclRules(prefix, pw, slices.DeleteFunc(slices.Clone(all), func(c string) bool { return c == cmd }))
				setACLUser(t, admin, user, rules)
				client := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: user, Password: pw, ContextTimeoutEnabled: true})
				defer client.Close()
				for _, clock := range clocks {
					_ = aclScenario(client, admin, prefix+clock.String()+":", clock)
				}
				if d := aclDenials(t, admin); !slices.ContainsFunc(d, func(s string) bool { return s == "command "+cmd }) {
					t.Fatalf("without %s: ACL LOG got %v, want it refused", cmd, d)
				}
			})
		}
	})

	t.Run("cluster", func(t *testing.T) {
		start := time.Now()
		cl := redistest.StartCluster(t)
		prefix := testPrefix(t)
		var admins []*redis.Client
		for _, n := range cl.Nodes {
			a := redistest.Client(t, n.Addr())
			cmds := aclCommands(t, a, true)
			setACLUser(t, a, user, aclRules(prefix, pw, cmds))
			// A user without each of the Cluster's own.
			for _, c := range storeACL.Cluster {
				setACLUser(t, a, user+"-no-"+c, aclRules(prefix, pw, slices.DeleteFunc(slices.Clone(cmds), func(d string) bool { return d == c })))
			}
			admins = append(admins, a)
		}
		// Not cl.Client, whose PING this user may not send.
		client := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: user, Password: pw,
			ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond})
		t.Cleanup(func() { client.Close() })
		admin := cl.Client(t)
		for _, clock := range clocks {
			t.Run(clock.String(), func(t *testing.T) {
				if clock == serverClock {
					awaitServerWindow(t, admins[0], time.Minute)
				}
				if err := aclScenario(client, admin, prefix+clock.String()+":", clock); err != nil {
					t.Fatal(err)
				}
				for i, a := range admins {
					if d := aclDenials(t, a); len(d) > 0 {
						t.Fatalf("node %d's ACL LOG: got %v, want nothing refused", i, d)
					}
				}
			})
		}
		t.Run("slot_migrating", func(t *testing.T) {
			// A slot mid-migration: the store's call to the old master
			// finds the keys gone and sends the decision again with its
			// keys declared, which the client follows by ASK (ASKING,
			// then the script on the importing node).
			ctx := context.Background()
			s, err := New(client, WithPrefix(prefix+"migrating:"), WithTimeout(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			l := newLimiter(t, limiter.MustPolicy("acl", limiter.PerMinute(10)), s, limitertest.New(time.Now()))
			if d, err := l.Allow(ctx, "migr", 1); err != nil || !d.Allowed {
				t.Fatalf("Allow before the move: got %v, %v", d.Allowed, err)
			}
			slot, err := admins[0].ClusterKeySlot(ctx, "migr").Result()
			if err != nil {
				t.Fatal(err)
			}
			owner := cl.SlotOwner(t, int(slot))
			to := slices.IndexFunc(cl.Nodes, func(n *redistest.Server) bool { return n.Addr() != owner })
			finish := cl.BeginMove(t, int(slot), to)
			d, err := l.Allow(ctx, "migr", 1)
			finish()
			if err != nil || !d.Allowed || d.Remaining != 8 {
				var refused []string
				for _, a := range admins {
					refused = append(refused, aclDenials(t, a)...)
				}
				t.Fatalf("Allow mid-migration: got %+v, %v (ACL LOG %v); want allowed with 8 remaining", d, err, refused)
			}
			if s.Stats().Resent == 0 {
				t.Fatal("the decision was not sent again: no ASK followed")
			}
			for i, a := range admins {
				if d := aclDenials(t, a); len(d) > 0 {
					t.Fatalf("node %d's ACL LOG: got %v, want nothing refused", i, d)
				}
			}
		})
		for _, cmd := range storeACL.Cluster {
			t.Run("without_"+strings.ReplaceAll(cmd, "|", "_"), func(t *testing.T) {
				c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), Username: user + "-no-" + cmd, Password: pw,
					ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond})
				defer c.Close()
				s, err := New(c, WithPrefix(prefix), WithTimeout(500*time.Millisecond))
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				l := newLimiter(t, limiter.MustPolicy("acl", limiter.PerMinute(10)), s, limitertest.New(time.Now()))
				for _, a := range admins {
					if err := a.Do(context.Background(), "ACL", "LOG", "RESET").Err(); err != nil {
						t.Fatal(err)
					}
				}
				// A decision goes to its master's own client; Reset's DEL
				// is routed by the Cluster client, which reads COMMAND
				// first.
				_, _ = l.Allow(context.Background(), "k", 1)
				_ = l.Reset(context.Background(), "k")
				if cmd == "asking" {
					// Only a slot mid-migration asks: a fresh slot of
					// keys created by the admin, moved with them.
					slot, err := admins[0].ClusterKeySlot(context.Background(), "ask").Result()
					if err != nil {
						t.Fatal(err)
					}
					_, _ = l.Allow(context.Background(), "ask", 1)
					owner := cl.SlotOwner(t, int(slot))
					finish := cl.BeginMove(t, int(slot), slices.IndexFunc(cl.Nodes, func(n *redistest.Server) bool { return n.Addr() != owner }))
					_, _ = l.Allow(context.Background(), "ask", 1)
					finish()
				}
				var refused []string
				for _, a := range admins {
					refused = append(refused, aclDenials(t, a)...)
				}
				if !slices.Contains(refused, "command "+cmd) {
					t.Fatalf("without %s: ACL LOG got %v, want it refused", cmd, refused)
				}
			})
		}
		t.Logf("cluster case in %v", time.Since(start).Round(time.Millisecond))
	})
}

// keysLike returns the keys matching pattern, on every master of a
// Cluster client.
func keysLike(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return c.Keys(ctx, pattern).Result()
	}
	var (
		mu  sync.Mutex
		out []string
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return err
	})
	return out, err
}
