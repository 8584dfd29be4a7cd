package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/internal/redistest"
)

func TestPolicyRisk(t *testing.T) {
	tests := []struct {
		name  string
		cfg   map[string]string
		risky bool
	}{
		{"noeviction_with_maxmemory", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "noeviction"}, true},
		{"noeviction_unbounded", map[string]string{"maxmemory": "0", "maxmemory-policy": "noeviction"}, false},
		{"volatile_lfu", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "volatile-lfu"}, false},
		{"allkeys_lfu", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "allkeys-lfu"}, false},
		{"volatile_lru", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "volatile-lru"}, true},
		{"allkeys_lru", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "allkeys-lru"}, true},
		{"volatile_ttl", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "volatile-ttl"}, true},
		{"allkeys_random", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "allkeys-random"}, true},
		{"volatile_random", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "volatile-random"}, true},
		{"random_unbounded", map[string]string{"maxmemory": "0", "maxmemory-policy": "allkeys-random"}, false},
		{"unknown_policy", map[string]string{"maxmemory": "6291456", "maxmemory-policy": "some-future-policy"}, false},
		{"empty_reply", map[string]string{}, false},
		{"malformed_maxmemory", map[string]string{"maxmemory": "6mb", "maxmemory-policy": "noeviction"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := policyRisk("10.0.0.1:6379", tt.cfg)
			if (got != "") != tt.risky {
				t.Fatalf("policyRisk(%v) = %q, want risky %v", tt.cfg, got, tt.risky)
			}
			if got == "" {
				return
			}
			for _, part := range []string{"10.0.0.1:6379", tt.cfg["maxmemory-policy"], "use " + recommendedPolicy} {
				if !strings.Contains(got, part) {
					t.Errorf("policyRisk(%v) = %q, want it to name %q", tt.cfg, got, part)
				}
			}
			if strings.Contains(got, "\n") {
				t.Errorf("policyRisk(%v) = %q, want one line", tt.cfg, got)
			}
		})
	}
}

// checkCtx bounds one check, as New's caller would.
func checkCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestMemoryPolicyRiskServers asks throwaway servers started with each
// policy.
func TestMemoryPolicyRiskServers(t *testing.T) {
	tests := []struct {
		name      string
		maxmemory string // "" for none
		policy    string
		risky     bool
	}{
		{"noeviction_with_maxmemory", "6mb", "noeviction", true},
		{"noeviction_unbounded", "", "noeviction", false},
		{"volatile_lfu", "6mb", "volatile-lfu", false},
		{"allkeys_lfu", "6mb", "allkeys-lfu", false},
		{"volatile_lru", "6mb", "volatile-lru", true},
		{"allkeys_lru", "6mb", "allkeys-lru", true},
		{"volatile_ttl", "6mb", "volatile-ttl", true},
		{"allkeys_random", "6mb", "allkeys-random", true},
		{"volatile_random", "6mb", "volatile-random", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--maxmemory-policy", tt.policy}
			if tt.maxmemory != "" {
				args = append(args, "--maxmemory", tt.maxmemory)
			}
			srv := redistest.StartServer(t, args...)
			got, err := memoryPolicyRisk(checkCtx(t), redistest.Client(t, srv.Addr()))
			if err != nil {
				t.Fatalf("memoryPolicyRisk: %v", err)
			}
			if (got != "") != tt.risky || tt.risky && !strings.Contains(got, srv.Addr()) {
				t.Fatalf("maxmemory %q, policy %s: got %q, want risky %v, naming %s", tt.maxmemory, tt.policy, got, tt.risky, srv.Addr())
			}
			t.Logf("%s: %q", tt.policy, got)
		})
	}
}

// TestMemoryPolicyRiskConfigRefused: a server that will not answer CONFIG
// GET (an ACL user without +config; a managed service that renames the
// command away) is no risk found and no error, even when it is risky.
func TestMemoryPolicyRiskConfigRefused(t *testing.T) {
	risky := []string{"--maxmemory", "6mb", "--maxmemory-policy", "noeviction"}
	t.Run("acl_user_without_config", func(t *testing.T) {
		srv := redistest.StartServer(t, risky...)
		admin := redistest.Client(t, srv.Addr())
		if err := admin.Do(context.Background(), "ACL", "SETUSER", "limiter", "on", ">secret", "~*", "&*", "+@all", "-config").Err(); err != nil {
			t.Fatalf("ACL SETUSER: %v", err)
		}
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "limiter", Password: "secret", ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		if err := c.ConfigGet(context.Background(), "maxmemory").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("CONFIG GET as limiter: got %v, want NOPERM", err)
		}
		if got, err := memoryPolicyRisk(checkCtx(t), c); got != "" || err != nil {
			t.Fatalf("got %q, %v; want \"\", nil", got, err)
		}
	})
	t.Run("config_renamed_away", func(t *testing.T) {
		srv := redistest.StartServer(t, append(risky, "--rename-command", "CONFIG", "")...)
		c := redistest.Client(t, srv.Addr())
		if got, err := memoryPolicyRisk(checkCtx(t), c); got != "" || err != nil {
			t.Fatalf("got %q, %v; want \"\", nil", got, err)
		}
	})
}

// TestMemoryPolicyRiskServerDown: a server that does not answer is an
// error, for the caller to ignore, and no risk.
func TestMemoryPolicyRiskServerDown(t *testing.T) {
	srv := redistest.StartServer(t)
	c := redistest.Client(t, srv.Addr())
	srv.Kill()
	got, err := memoryPolicyRisk(checkCtx(t), c)
	if got != "" || err == nil || !strings.Contains(err.Error(), srv.Addr()) {
		t.Fatalf("server down: got %q, %v; want \"\" and an error naming %s", got, err, srv.Addr())
	}
}

// TestMemoryPolicyRiskRing: a Ring is checked shard by shard, and a down
// shard does not hide a risky one.
func TestMemoryPolicyRiskRing(t *testing.T) {
	safe := redistest.StartServer(t, "--maxmemory", "6mb", "--maxmemory-policy", "volatile-lfu")
	risky := redistest.StartServer(t, "--maxmemory", "6mb", "--maxmemory-policy", "allkeys-random")
	down := redistest.StartServer(t)
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": safe.Addr(), "b": risky.Addr(), "c": down.Addr()},
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
	})
	t.Cleanup(func() { ring.Close() })
	down.Kill()
	got, err := memoryPolicyRisk(checkCtx(t), ring)
	if !strings.Contains(got, risky.Addr()) || !strings.Contains(got, "allkeys-random") || strings.Contains(got, safe.Addr()) {
		t.Errorf("got %q, want the risk of %s alone", got, risky.Addr())
	}
	// err names the down shard, unless the Ring's heartbeat has already
	// taken it out, when it is not asked.
	t.Logf("%q, %v", got, err)
}

// TestMemoryPolicyRiskCluster: every master of a Cluster is asked; the
// one set risky is named.
func TestMemoryPolicyRiskCluster(t *testing.T) {
	cl := redistest.StartCluster(t)
	cc := cl.Client(t)
	if got, err := memoryPolicyRisk(checkCtx(t), cc); got != "" || err != nil {
		t.Fatalf("cluster with defaults: got %q, %v; want \"\", nil", got, err)
	}
	node := redistest.Client(t, cl.Nodes[1].Addr())
	for _, kv := range [][2]string{{"maxmemory", "6mb"}, {"maxmemory-policy", "noeviction"}} {
		if err := node.ConfigSet(context.Background(), kv[0], kv[1]).Err(); err != nil {
			t.Fatalf("CONFIG SET %s %s: %v", kv[0], kv[1], err)
		}
	}
	got, err := memoryPolicyRisk(checkCtx(t), cc)
	if err != nil || !strings.Contains(got, cl.Nodes[1].Addr()) || !strings.Contains(got, "OOM") || strings.Contains(got, "more servers") {
		t.Fatalf("one master noeviction at 6mb: got %q, %v; want its risk alone, naming %s", got, err, cl.Nodes[1].Addr())
	}
	t.Logf("%q", got)
}

// TestPingWarnsOfARiskyMemoryPolicy: a service with no observer learns of
// a risky maxmemory policy from Ping, which still succeeds, so that the
// service starts; a safe policy, and a server that refuses CONFIG GET,
// give no warning (issue 36).
func TestPingWarnsOfARiskyMemoryPolicy(t *testing.T) {
	tests := []struct {
		name string
		args []string
		acl  bool // ask as a user without +config
		warn bool
	}{
		{"volatile_lru", []string{"--maxmemory", "6mb", "--maxmemory-policy", "volatile-lru"}, false, true},
		{"noeviction_with_maxmemory", []string{"--maxmemory", "6mb", "--maxmemory-policy", "noeviction"}, false, true},
		{"volatile_lfu", []string{"--maxmemory", "6mb", "--maxmemory-policy", "volatile-lfu"}, false, false},
		{"no_maxmemory", nil, false, false},
		{"config_refused", []string{"--maxmemory", "6mb", "--maxmemory-policy", "volatile-lru"}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := redistest.StartServer(t, tt.args...)
			c := redistest.Client(t, srv.Addr())
			if tt.acl {
				if err := c.Do(context.Background(), "ACL", "SETUSER", "limiter", "on", ">secret", "~*", "&*", "+@all", "-config").Err(); err != nil {
					t.Fatalf("ACL SETUSER: %v", err)
				}
				c = redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "limiter", Password: "secret", ContextTimeoutEnabled: true})
				t.Cleanup(func() { c.Close() })
			}
			s, err := New(c) // no observer
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			warnings, err := s.Ping(checkCtx(t))
			if err != nil {
				t.Fatalf("Ping: %v, want nil: a risky policy must not fail the start", err)
			}
			if got := len(warnings) > 0; got != tt.warn {
				t.Fatalf("Ping warnings %q, want a warning: %v", warnings, tt.warn)
			}
			for _, w := range warnings {
				if !strings.Contains(w, srv.Addr()) || !strings.Contains(w, "use "+recommendedPolicy) || !strings.HasPrefix(w, "redisstore: ") {
					t.Errorf("warning %q: want it to start with redisstore:, name %s and advise %s", w, srv.Addr(), recommendedPolicy)
				}
			}
			t.Logf("%q", warnings)
		})
	}
}
