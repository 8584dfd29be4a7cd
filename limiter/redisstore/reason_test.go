package redisstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// TestErrorRepliesNamed: an error reply other than a corrupt value fails
// the decision as an error under the failure policy, named for what it
// is, and is never taken for an outage (the breaker stays closed, so the
// reason stays visible) nor for corruption (nothing refused, no corrupt
// value reported). Before, a NOPERM on HMGET under serverClock refused
// every key as corrupt with no error, and OOM opened the breaker, after
// which every client read "circuit breaker is open".
func TestErrorRepliesNamed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		clock  clockSource
		setup  func(t *testing.T, admin *redis.Client, prefix string) *redis.Client
		reason string
		text   string
		risky  bool // New reports the memory policy as risky
	}{
		{"out_of_memory", appClock, func(t *testing.T, admin *redis.Client, _ string) *redis.Client {
			// Any write is over a 1-byte maxmemory under noeviction.
			set(t, admin, "maxmemory-policy", "noeviction")
			set(t, admin, "maxmemory", "1")
			return admin
		}, "out_of_memory", "out of memory", true},
		{"permission_denied_server_clock", serverClock, func(t *testing.T, admin *redis.Client, prefix string) *redis.Client {
			return aclUser(t, admin, prefix, "set")
		}, "permission_denied", "permission denied", false},
		{"permission_denied_app_clock", appClock, func(t *testing.T, admin *redis.Client, prefix string) *redis.Client {
			return aclUser(t, admin, prefix, "mget")
		}, "permission_denied", "permission denied", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartServer(t)
			admin := redistest.Client(t, srv.Addr())
			prefix := testPrefix(t)
			c := tc.setup(t, admin, prefix)
			var ev events
			s, err := New(c, WithPrefix(prefix), withClockSource(tc.clock), WithObserver(ev.observe))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			p := limiter.MustPolicy("named", limiter.PerMinute(10))
			for i := range 2 * defaultBreakerFailures {
				d, err := s.Take(context.Background(), limiter.Request{Key: "fresh", Policy: p, Now: t0, Cost: 1})
				switch {
				case d.Allowed || err == nil:
					t.Fatalf("decision %d: %+v, %v; want an error", i, d, err)
				case !errors.Is(err, ErrUnavailable) || reasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.text):
					t.Fatalf("decision %d: error %q, reason %q; want ErrUnavailable, reason %q, text %q", i, err, reasonOf(err), tc.reason, tc.text)
				case errors.Is(err, ErrCircuitOpen):
					t.Fatalf("decision %d: %v; the breaker opened on an answer", i, err)
				}
			}
			if tc.risky { // the check New started answers within its timeout
				ev.await(memoryCheckTimeout, func(got []Event) bool { return len(got) > 0 })
			}
			ev.mu.Lock()
			defer ev.mu.Unlock()
			var other []Event
			risky := 0
			for _, e := range ev.got {
				if e.Kind == RiskyMemoryPolicy && strings.Contains(e.Err.Error(), "noeviction") {
					risky++
				} else {
					other = append(other, e)
				}
			}
			if len(other) != 0 || tc.risky != (risky == 1) {
				t.Fatalf("events %+v; want none (no outage, no corrupt value) but for the risky memory policy (%v)", ev.got, tc.risky)
			}
			if st := s.Stats(); st.Failures != 2*defaultBreakerFailures || st.Decisions != 0 {
				t.Fatalf("stats %+v; want every decision a failure", st)
			}
		})
	}
}

// set sets one server parameter.
func set(t *testing.T, c *redis.Client, param, value string) {
	t.Helper()
	if err := c.ConfigSet(context.Background(), param, value).Err(); err != nil {
		t.Fatal(err)
	}
}

// aclUser returns a client of a user with storeACL's commands on keys
// under prefix, less the command without.
func aclUser(t *testing.T, admin *redis.Client, prefix, without string) *redis.Client {
	t.Helper()
	cmds := slices.DeleteFunc(slices.Clone(storeACL.Commands), func(c string) bool { return c == without })
	if err := admin.Do(context.Background(), append([]any{"acl", "setuser", "limited"}, aclRules(prefix, "pw", cmds)...)...).Err(); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: admin.Options().Addr, Username: "limited", Password: "pw",
		ContextTimeoutEnabled: true, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}
