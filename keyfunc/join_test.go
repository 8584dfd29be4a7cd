package keyfunc

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// fixed returns a Func that always yields key.
func fixed(key string) Func {
	return func(*http.Request) (string, error) { return key, nil }
}

func TestJoin(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		parts []Func
		want  string
	}{
		{"one", []Func{fixed("ip4:1.2.3.4")}, "join:11:ip4:1.2.3.4,"},
		{"two", []Func{fixed("ip4:1.2.3.4"), fixed("route:/u/{id}")}, "join:11:ip4:1.2.3.4,13:route:/u/{id},"},
		{"separator_in_first", []Func{fixed("a:b"), fixed("c")}, "join:3:a:b,1:c,"},
		{"separator_in_second", []Func{fixed("a"), fixed("b:c")}, "join:1:a,3:b:c,"},
		{"long_hashed", []Func{fixed(long)}, hashKey("join:300:" + long + ",")},
		{"failing_part", []Func{fixed("a"), func(*http.Request) (string, error) { return "", ErrNoKey }}, ""},
		{"empty_part", []Func{fixed("a"), fixed("")}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, must(t)(Join(tt.parts...)), request("192.0.2.1:1"), tt.want)
		})
	}
}

// TestJoinNoCollision checks that lists of parts that concatenate alike
// still give different keys.
func TestJoinNoCollision(t *testing.T) {
	lists := [][]string{
		{"a:b", "c"}, {"a", "b:c"}, {"a:b:c"}, {"a", "b", "c"},
		{"1:a,", "b"}, {"1:a", ",b"}, {"ab", "c"}, {"a", "bc"},
		{"3:a:b,1:c,"}, {"join:1:a,"},
	}
	seen := map[string][]string{}
	for _, l := range lists {
		parts := make([]Func, len(l))
		for i, s := range l {
			parts[i] = fixed(s)
		}
		k, err := must(t)(Join(parts...))(request("192.0.2.1:1"))
		if err != nil {
			t.Fatalf("Join(%q): %v", l, err)
		}
		if prev, ok := seen[k]; ok {
			t.Fatalf("Join(%q) and Join(%q) both give %q", prev, l, k)
		}
		seen[k] = l
	}
}

func TestJoinRejectsBadParts(t *testing.T) {
	tests := []struct {
		name  string
		parts []Func
	}{
		{"none", nil},
		{"nil_part", []Func{fixed("a"), nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := Join(tt.parts...); f != nil || !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("Join(%d parts): got error %v, want one wrapping ErrInvalidOption", len(tt.parts), err)
			}
		})
	}
}

func TestJoinWrapsPartError(t *testing.T) {
	f := must(t)(Join(fixed("a"), must(t)(Header("X-API-Key"))))
	_, err := f(request("192.0.2.1:1"))
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "join part 1") {
		t.Fatalf("got %v, want ErrNoKey naming part 1", err)
	}
}

func TestHashKey(t *testing.T) {
	k := hashKey("hdr:X-Api-Key:secret")
	if !strings.HasPrefix(k, "sha256:") || len(k) != 71 {
		t.Fatalf("hashKey = %q, want sha256: and 64 hex digits", k)
	}
	if strings.Contains(k, "secret") {
		t.Fatalf("hashKey = %q keeps the value in clear", k)
	}
	if k2 := hashKey("hdr:X-Api-Key:secreT"); k2 == k {
		t.Fatalf("two values hash alike: %q", k)
	}
}
