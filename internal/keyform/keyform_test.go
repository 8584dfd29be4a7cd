package keyform

import (
	"errors"
	"strings"
	"testing"
)

var (
	errNoKey         = errors.New("test: no key")
	errMisconfigured = errors.New("test: misconfigured")
	testRules        = Rules{Prefix: "test", NoKey: errNoKey, Misconfigured: errMisconfigured}
)

// keys returns an alternative or part function over fixed answers: a
// string is a key, an error is returned as it is.
func keys(answers ...any) func(int) (string, error) {
	return func(i int) (string, error) {
		switch a := answers[i].(type) {
		case string:
			return a, nil
		case error:
			return "", a
		}
		panic("keys: neither a string nor an error")
	}
}

func TestJoin(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name  string
		parts []any
		want  string
	}{
		{"one", []any{"1.2.3.4"}, "join:7:1.2.3.4,"},
		{"separator_in_first", []any{"a:b", "c"}, "join:3:a:b,1:c,"},
		{"separator_in_second", []any{"a", "b:c"}, "join:1:a,3:b:c,"},
		{"long_hashed", []any{long}, Hash("join:300:" + long + ",")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testRules.Join(len(tt.parts), keys(tt.parts...))
			if err != nil || got != tt.want {
				t.Fatalf("Join(%q) = %q, %v; want %q", tt.parts, got, err, tt.want)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		parts []any
		want  error
	}{
		{"failing_part", []any{"a", errNoKey}, errNoKey},
		{"empty_part", []any{"a", ""}, errNoKey},
		{"misconfigured_part", []any{errMisconfigured, "a"}, errMisconfigured},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testRules.Join(len(tt.parts), keys(tt.parts...))
			if !errors.Is(err, tt.want) || got != "" || !strings.HasPrefix(err.Error(), "test: ") {
				t.Fatalf("Join(%q) = %q, %v; want an error wrapping %v", tt.parts, got, err, tt.want)
			}
		})
	}
}

func TestFirst(t *testing.T) {
	broken := errors.New("session store down")
	tests := []struct {
		name    string
		alts    []any
		want    string
		wantErr error // nil: want wins
		noKey   bool  // the error must (true) or must not (false) match NoKey
	}{
		{"first_resolves", []any{"user:42", "1.2.3.4"}, "user:42", nil, false},
		{"no_key_passed_over", []any{errNoKey, "1.2.3.4"}, "1.2.3.4", nil, false},
		{"empty_key_passed_over", []any{"", "1.2.3.4"}, "1.2.3.4", nil, false},
		{"none_resolves", []any{errNoKey, ""}, "", errNoKey, true},
		{"other_error_stops", []any{broken, "1.2.3.4"}, "", broken, false},
		{"misconfigured_stops", []any{errors.Join(errMisconfigured, errNoKey), "1.2.3.4"}, "", errMisconfigured, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := testRules.First(len(tt.alts), keys(tt.alts...))
			if tt.wantErr == nil {
				if err != nil || got != tt.want {
					t.Fatalf("First(%q) = %q, %v; want %q", tt.alts, got, err, tt.want)
				}
				return
			}
			if got != "" || !errors.Is(err, tt.wantErr) || errors.Is(err, errNoKey) != tt.noKey {
				t.Fatalf("First(%q) = %q, %v; want an error wrapping %v (NoKey %v)", tt.alts, got, err, tt.wantErr, tt.noKey)
			}
		})
	}
}

func TestBound(t *testing.T) {
	short, long := "hdr:X-Api-Key:k", "hdr:X-Api-Key:"+strings.Repeat("k", DefaultMaxLen)
	for _, tt := range []struct {
		name    string
		key     string
		hashAll bool
		want    string
	}{
		{"short_whole", short, false, short},
		{"short_hashed_when_all", short, true, Hash(short)},
		{"long_hashed", long, false, Hash(long)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Bound(tt.key, DefaultMaxLen, tt.hashAll); got != tt.want {
				t.Fatalf("Bound(%q, %d, %v) = %q, want %q", tt.key, DefaultMaxLen, tt.hashAll, got, tt.want)
			}
		})
	}
	if h := Hash(short); len(h) != MinMaxLen || !strings.HasPrefix(h, HashKind) {
		t.Fatalf("Hash(%q) = %q: want %d bytes starting %q", short, h, MinMaxLen, HashKind)
	}
}

// TestJoinAllocatesTheKeyOnly: the part function does not escape, so a
// caller's closure over its request stays on the stack.
func TestJoinAllocatesTheKeyOnly(t *testing.T) {
	parts := []string{"203.0.113.7", "user:42"}
	n := testing.AllocsPerRun(100, func() {
		_, _ = testRules.Join(len(parts), func(i int) (string, error) { return parts[i], nil })
	})
	if n != 1 {
		t.Fatalf("Join allocates %v times, want 1 (the key)", n)
	}
}
