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
// must not grow the cache without end: past the bound it starts afresh,
// every key still right, the policy last asked for kept.
func TestKeyCacheBounded(t *testing.T) {
	var c keyCache
	for i := range maxCachedPolicies + 50 {
		p := limiter.MustPolicy("p"+strconv.Itoa(i), limiter.PerMinute(int64(i+1)))
		pk := c.get(p)
		if want := ":" + p.Name() + ":60000"; pk.suffix[0] != want {
			t.Fatalf("policy %d: suffix %q, want %q", i, pk.suffix[0], want)
		}
	}
	n := 0
	c.m.Range(func(any, any) bool { n++; return true })
	if n != 50 || c.n.Load() != 50 {
		t.Fatalf("cache holds %d (counted %d), want 50: afresh at the bound, then the 50 past it", n, c.n.Load())
	}
}
