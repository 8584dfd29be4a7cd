package redisstore

import (
	"strings"
	"testing"
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
