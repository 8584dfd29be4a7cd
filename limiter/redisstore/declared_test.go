package redisstore

import (
	"context"
	"errors"
	"maps"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// TestIsRefusal: the refusals of a call for the keys it declares are told
// from every other failure, which must not switch the store to calls per
// key.
func TestIsRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"envoy_no_key", serverError("ERR wrong number of arguments for 'evalsha' command"), true},
		{"dragonfly_undeclared", serverError("ERR Error running script (call to f_0123): @user_script:70: script tried accessing undeclared key, key: rl:{a}:p:60000"), true},
		{"proxy_no_key", serverError("ERR no key to route the script by"), true},
		{"redis_non_local_key", serverError("ERR Script attempted to access a non local key in a cluster node"), true},
		{"crossslot", serverError("CROSSSLOT Keys in request don't hash to the same slot"), true},
		{"cluster_proxy_cross_slot", serverError("ERR Cross-slot queries are not supported for this command"), true},
		{"parsed_reply", redis.Error(proto("ERR wrong number of arguments for 'eval' command")), true},
		{"noscript", serverError("NOSCRIPT No matching script. Please use EVAL."), false},
		{"moved", serverError("MOVED 3999 127.0.0.1:6381"), false},
		{"clusterdown", serverError("CLUSTERDOWN The cluster is down"), false},
		{"oom", serverError("OOM command not allowed when used memory > 'maxmemory'."), false},
		{"noperm", serverError("NOPERM this user has no permissions to access one of the keys used as arguments"), false},
		{"network", &net.OpError{Op: "read", Net: "tcp", Err: errors.New("no key")}, false},
		{"timeout", context.DeadlineExceeded, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := isRefusal(tc.err); got != tc.want {
				t.Errorf("isRefusal(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

// proto is an error reply as go-redis parses it from a reply it reads
// itself (RedisError), not from raw RESP.
type proto string

func (e proto) Error() string { return string(e) }
func (proto) RedisError()     {}

// TestDeclaredKeysSingleNode: a single client behind a proxy that
// refuses a script call declaring no key, the way proxies that route by
// key do: the store's calls declare their keys and pass; Ping's call,
// which declares none, is refused, asked again with a key declared, and
// makes the store declare every key, one client key per call
// (WithDeclaredKeys does from the start). Behind a proxy in front of a
// Cluster master, the master answers CROSSSLOT to a call across slots,
// and the store falls back to calls per key by itself. Every decision is
// answered exactly and charged once either way.
func TestDeclaredKeysSingleNode(t *testing.T) {
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	master := cl.Nodes[0].Addr()
	for _, tc := range []struct {
		name   string
		target string // the proxy's server
		ping   bool   // Ping before the decisions
		opts   []Option
		// the proxy's refusals and the store's KeysDeclared events: one
		// of each, or none
		refusal      bool
		declared     bool
		crossSlot    bool // the first round's call is refused CROSSSLOT
		callsPerKeys bool // a call per client key
	}{
		{"no_ping", redistest.Shared(t).Options().Addr, false, nil, false, false, false, false},
		{"ping_first", redistest.Shared(t).Options().Addr, true, nil, true, true, false, true},
		{"with_declared_keys", redistest.Shared(t).Options().Addr, true, []Option{WithDeclaredKeys()}, false, false, false, true},
		{"cluster_master", master, false, nil, false, true, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			proxy := redistest.StartKeyProxy(t, tc.target)
			c := redistest.Client(t, proxy.Addr())
			direct := redistest.Client(t, tc.target)
			for _, src := range []string{takeSource, slotSource} {
				if err := direct.ScriptLoad(ctx, src).Err(); err != nil {
					t.Fatal(err)
				}
			}
			var ev events
			s := newStore(t, c, append([]Option{WithObserver(ev.observe), WithOverLimitCache(0)}, tc.opts...)...)
			if tc.ping {
				if _, err := s.Ping(ctx); err != nil {
					t.Fatalf("Ping: %v", err)
				}
			}
			// Keys in slots of their own, all on the Cluster master.
			keys := keysOnNode(t, cl, admin, master, 4)
			p := limiter.MustPolicy("declared-one", limiter.PerMinute(3), limiter.PerHour(100))
			before := s.Stats()
			checkDecided(t, s, keys, p)
			calls := s.Stats().RoundTrips - before.RoundTrips
			want := uint64(1)
			switch {
			case tc.crossSlot:
				want = 1 + uint64(len(keys)) // the refused call, then one per key
			case tc.callsPerKeys:
				want = uint64(len(keys))
			}
			if calls != want {
				t.Errorf("%d script calls for %d keys, want %d", calls, len(keys), want)
			}
			checkCounts(t, s, direct, keys, p)
			if got, want := proxy.Refused(), map[bool]int64{false: 0, true: 1}[tc.refusal]; got != want {
				t.Errorf("the proxy refused %d script calls, want %d", got, want)
			}
			checkDeclared(t, s, &ev, tc.declared || tc.callsPerKeys, tc.declared, proxy.Addr())
			// (Ping's key may be another master's: the proxy in front of
			// one master stands for one that routes by key.)
			if _, err := s.Ping(ctx); tc.target != master && err != nil {
				t.Errorf("Ping after the decisions: %v", err)
			}
			checkSlots(t, s, keys)
		})
	}
}

// TestDeclaredKeysClusterBehindProxies: a Cluster client whose
// connections to every node go through a proxy that refuses a script
// call declaring no key, answered as a proxy that needs a key to route
// by ("wrong number of arguments", Envoy's words for an EVAL too short to
// name one) or as DragonflyDB refuses an undeclared key. The first
// round's node calls are refused, one per master, and their decisions
// sent again at once, a call per client key with its keys declared, which
// the proxies pass; the store declares every key from then on, decisions
// and in-flight slots alike, each exact and charged once, and Health
// names the masters. WithDeclaredKeys is refused nothing.
func TestDeclaredKeysClusterBehindProxies(t *testing.T) {
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	for _, tc := range []struct {
		name, refusal string
		opts          []Option
	}{
		{"proxy_needs_a_key", redistest.DefaultRefusal, nil},
		{"dragonfly", "ERR Error running script (call to f_" + takeHash + "): @user_script:1: script tried accessing undeclared key, key: rl:{x}", nil},
		{"with_declared_keys", redistest.DefaultRefusal, []Option{WithDeclaredKeys()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			detect := tc.opts == nil
			c, proxies := proxiedCluster(t, cl, tc.refusal)
			refused := func() (n int64) {
				for _, p := range proxies {
					n += p.Refused()
				}
				return n
			}
			var keys []string
			for _, n := range cl.Nodes {
				keys = append(keys, keysOnNode(t, cl, admin, n.Addr(), 2)...)
			}
			p := limiter.MustPolicy("declared-cluster", limiter.PerMinute(3), limiter.PerHour(100))
			var ev events
			s := newStore(t, c, append([]Option{WithObserver(ev.observe), WithOverLimitCache(0)}, tc.opts...)...)
			loadScripts(t, admin)
			before := s.Stats()
			checkDecided(t, s, keys, p)
			st := s.Stats()
			wantRefused, wantCalls := int64(0), uint64(len(keys))
			if detect { // a node call per master, refused
				wantRefused, wantCalls = int64(len(cl.Nodes)), uint64(len(cl.Nodes)+len(keys))
			}
			if got := refused(); got != wantRefused {
				t.Errorf("the proxies refused %d script calls, want %d", got, wantRefused)
			}
			if got := st.RoundTrips - before.RoundTrips; got != wantCalls {
				t.Errorf("%d script calls, want %d", got, wantCalls)
			}
			if got, want := st.Resent-before.Resent, map[bool]uint64{false: 0, true: 4 * uint64(len(keys))}[detect]; got != want {
				t.Errorf("%d decisions sent again, want %d", got, want)
			}
			checkCounts(t, s, admin, keys, p)
			e := checkDeclared(t, s, &ev, true, detect, "")
			if detect && (e.Err == nil || !strings.Contains(e.Err.Error(), tc.refusal) || proxies[e.Node] == nil) {
				t.Errorf("event %v: want a master's address and its proxy's refusal %q", e, tc.refusal)
			}
			// The next round: a call per key, none refused.
			before, was := s.Stats(), refused()
			checkDecided(t, s, keys, limiter.MustPolicy("declared-cluster-2", limiter.PerMinute(3)))
			if got := s.Stats().RoundTrips - before.RoundTrips; got != uint64(len(keys)) || refused() != was {
				t.Errorf("after the refusals: %d script calls for %d keys, %d more refused; want one per key, none", got, len(keys), refused()-was)
			}
			checkSlots(t, s, keys)
			if _, err := s.Ping(context.Background()); err != nil || refused() != was {
				t.Errorf("Ping: %v, %d more refused; want nil, none", err, refused()-was)
			}
			masters := map[string]Health{}
			for _, n := range cl.Nodes {
				masters[n.Addr()] = Healthy
			}
			if h := s.Health(); !maps.Equal(h, masters) {
				t.Errorf("health %v, want the masters' %v", h, masters)
			}
			if !detect {
				return
			}
			// A store whose first call is an in-flight slot's: its node
			// call is refused and sent again the same way.
			var ev2 events
			s2 := newStore(t, c, WithObserver(ev2.observe))
			was = refused()
			checkSlots(t, s2, keys[:1])
			if got := refused() - was; got != 1 {
				t.Errorf("slots first: %d script calls refused, want 1", got)
			}
			checkDeclared(t, s2, &ev2, true, true, "")
		})
	}
}

// proxiedCluster returns a Cluster client of cl whose connections to each
// node go through a KeyProxy of the node's own answering refusal
// (ClusterOptions.Dialer: the nodes keep their addresses, for MOVED and
// Health), and the proxies by node address.
func proxiedCluster(t *testing.T, cl *redistest.Cluster, refusal string) (*redis.ClusterClient, map[string]*redistest.KeyProxy) {
	t.Helper()
	proxies := map[string]*redistest.KeyProxy{}
	for _, n := range cl.Nodes {
		p := redistest.StartKeyProxy(t, n.Addr())
		p.SetRefusal(refusal)
		proxies[n.Addr()] = p
	}
	var d net.Dialer
	c := cl.Client(t, func(o *redis.ClusterOptions) {
		o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p := proxies[addr]; p != nil {
				addr = p.Addr()
			}
			return d.DialContext(ctx, network, addr)
		}
	})
	return c, proxies
}

// loadScripts loads both scripts on every master, so that no call is
// sent again after NOSCRIPT and calls can be counted.
func loadScripts(t *testing.T, c *redis.ClusterClient) {
	t.Helper()
	if err := c.ForEachMaster(context.Background(), func(ctx context.Context, n *redis.Client) error {
		if err := n.ScriptLoad(ctx, takeSource).Err(); err != nil {
			return err
		}
		return n.ScriptLoad(ctx, slotSource).Err()
	}); err != nil {
		t.Fatal(err)
	}
}

// checkDecided sends four requests for each key under p (3 a minute) in
// one round and checks that the first three of each are admitted and the
// fourth refused.
func checkDecided(t *testing.T, s *Store, keys []string, p *limiter.Policy) {
	t.Helper()
	var reqs []limiter.Request
	for range 4 {
		for _, k := range keys {
			reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
		}
	}
	seen := map[string]int{}
	for i, c := range sendTogether(t, s, reqs) {
		k := c.req.Key
		want := seen[k] < 3
		seen[k]++
		if c.err != nil || c.res.allowed != want {
			t.Errorf("request %d (%s, its %d.): %+v, %v; want allowed=%v", i, k, seen[k], c.res, c.err, want)
		}
	}
}

// checkCounts checks that each key's windows under p hold 3 in Redis
// (read through c): each admission charged once.
func checkCounts(t *testing.T, s *Store, c redis.UniversalClient, keys []string, p *limiter.Policy) {
	t.Helper()
	for _, k := range keys {
		for w := range p.NumRates() {
			if got, err := c.Get(context.Background(), keyOf(s, k, p, w, t0)).Result(); err != nil || got != "3" {
				t.Errorf("key %s, window %d: %q, %v; want 3, each admission charged once", k, w, got, err)
			}
		}
	}
}

// checkDeclared checks whether s declares every key, and that it told
// the observer once when it found out (detected), naming node (when not
// empty), or never; it returns that event.
func checkDeclared(t *testing.T, s *Store, ev *events, declared, detected bool, node string) Event {
	t.Helper()
	if s.declared.Load() != declared {
		t.Errorf("declared %v, want %v", s.declared.Load(), declared)
	}
	ev.mu.Lock()
	defer ev.mu.Unlock()
	var got []Event
	for _, e := range ev.got {
		if e.Kind == KeysDeclared {
			got = append(got, e)
		}
	}
	switch {
	case !detected && len(got) > 0:
		t.Errorf("KeysDeclared events %v, want none", got)
	case detected && len(got) != 1:
		t.Errorf("KeysDeclared events %v, want one", got)
	case detected && node != "" && got[0].Node != node:
		t.Errorf("KeysDeclared event names %q, want %q", got[0].Node, node)
	}
	if len(got) == 0 {
		return Event{}
	}
	return got[0]
}

// checkSlots takes both slots of a cap of two for each key, is refused a
// third, gives one back and takes it again.
func checkSlots(t *testing.T, s *Store, keys []string) {
	t.Helper()
	ctx := context.Background()
	cap2 := limiter.MustInFlight("declared-slots", 2).Policy()
	for _, k := range keys {
		req := limiter.SlotRequest{Key: k, Policy: cap2, Max: 2, Lease: time.Minute}
		var held []limiter.Slot
		for i, want := range []bool{true, true, false} {
			sl, err := s.AcquireSlot(ctx, req)
			if err != nil || sl.Acquired != want {
				t.Fatalf("%s, acquire %d: %+v, %v; want acquired=%v", k, i, sl, err, want)
			}
			if sl.Acquired {
				held = append(held, sl)
			}
		}
		if err := s.ReleaseSlot(ctx, req, held[0]); err != nil {
			t.Fatalf("%s, release: %v", k, err)
		}
		sl, err := s.AcquireSlot(ctx, req)
		if err != nil || !sl.Acquired {
			t.Fatalf("%s, acquire after a release: %+v, %v", k, sl, err)
		}
		for _, h := range []limiter.Slot{held[1], sl} {
			if err := s.ReleaseSlot(ctx, req, h); err != nil {
				t.Fatalf("%s, release: %v", k, err)
			}
		}
	}
}
