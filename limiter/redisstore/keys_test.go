package redisstore

import (
	"strconv"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
)

func TestTag(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"plain_key_unchanged", "alice", "alice"},
		{"ipv6_unchanged", "2001:db8::1", "2001:db8::1"},
		{"closing_brace_escaped", "a}b", "a%7Db"},
		{"empty_tag_attempt_escaped", "}x", "%7Dx"},
		{"opening_brace_escaped", "{x", "%7Bx"},
		{"percent_escaped_first", "%7D", "%257D"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tag(tc.key); got != tc.want {
				t.Fatalf("tag(%q): got %q, want %q", tc.key, got, tc.want)
			}
		})
	}
}

// FuzzTag checks that escaping is injective and leaves no brace, so every
// window of a client shares one hash tag and two clients never share keys.
func FuzzTag(f *testing.F) {
	for _, s := range []string{"", "a", "}", "{}", "%7D", "a}b{c%", "%%{{}}"} {
		f.Add(s, s+"}")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ta, tb := tag(a), tag(b)
		if strings.ContainsAny(ta, "{}") {
			t.Fatalf("tag(%q) = %q keeps a brace", a, ta)
		}
		if a != b && ta == tb {
			t.Fatalf("tag(%q) == tag(%q) == %q", a, b, ta)
		}
	})
}

// TestKeyCacheBounded: policies built per request (a lookup's plans)
// are kept up to internal/cache.MemoBound, far past the 4,096 after which
// the cache once started afresh (and computed every policy of a rotation
// past it per request): every key right, each policy kept once. Map's
// tests (internal/cache) hold the bound itself.
func TestKeyCacheBounded(t *testing.T) {
	var c keyCache
	const n = 5_000
	policies := make([]*limiter.Policy, n)
	for i := range policies {
		policies[i] = limiter.MustPolicy("p"+strconv.Itoa(i), limiter.PerMinute(int64(i+1)))
	}
	for range 2 {
		for _, p := range policies {
			pk := c.get(p)
			if want := ":" + p.Name() + ":60000"; pk.suffix[0] != want {
				t.Fatalf("policy %s: suffix %q, want %q", p.Name(), pk.suffix[0], want)
			}
		}
	}
	if st := c.m.Stats(); st.Kept != n || st.Misses != n || st.Hits != n {
		t.Fatalf("cache stats %+v, want %d kept, each computed once (%d misses) and found again (%d hits)", st, n, n, n)
	}
}
