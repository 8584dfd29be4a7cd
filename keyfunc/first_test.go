package keyfunc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

type userKey struct{}

// userID is the accessor of an authentication middleware that stored the
// signed-in user's id in the context.
func userID(r *http.Request) (string, bool) {
	id, ok := r.Context().Value(userKey{}).(string)
	return id, ok
}

// signedIn returns r as seen once user id has signed in.
func signedIn(r *http.Request, id string) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), userKey{}, id))
}

func TestFirst(t *testing.T) {
	byUser := must(t)(Principal(userID))
	byAddr := must(t)(RemoteHost())
	byAPIKey := must(t)(Header("X-API-Key"))
	userThenAddr := must(t)(First(byUser, byAddr))
	broken := errors.New("session store down")
	tests := []struct {
		name string
		f    Func
		r    *http.Request
		want string // "" means an error wrapping ErrNoKey
	}{
		{"signed_in_by_user", userThenAddr, signedIn(request("203.0.113.7:1"), "42"), "user:42"},
		{"anonymous_by_address", userThenAddr, request("203.0.113.7:1"), "203.0.113.7"},
		{"anonymous_ipv6_by_prefix", userThenAddr, request("[2001:db8:1:2::a]:1"), "ip6:2001:db8:1:2::/64"},
		{"empty_user_id_by_address", userThenAddr, signedIn(request("203.0.113.7:1"), ""), "203.0.113.7"},
		{"user_id_that_looks_like_an_address", userThenAddr, signedIn(request("198.51.100.1:1"), "203.0.113.7"), "user:203.0.113.7"},
		{"user_id_that_looks_like_an_ipv6_key", userThenAddr, signedIn(request("198.51.100.1:1"), "ip6:2001:db8:1:2::/64"), "user:ip6:2001:db8:1:2::/64"},
		{"neither_resolves", userThenAddr, request("not-an-address"), ""},
		{"three_alternatives_api_key_first", must(t)(First(byAPIKey, byUser, byAddr)), signedIn(request("203.0.113.7:1", "X-API-Key", "k-1"), "42"), "hdr:X-Api-Key:k-1"},
		{"three_alternatives_second", must(t)(First(byAPIKey, byUser, byAddr)), signedIn(request("203.0.113.7:1"), "42"), "user:42"},
		{"empty_key_passed_over", must(t)(First(fixed(""), byAddr)), request("203.0.113.7:1"), "203.0.113.7"},
		{"one_alternative", must(t)(First(byUser)), request("203.0.113.7:1"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, tt.f, tt.r, tt.want)
		})
	}
	t.Run("other_error_stops", func(t *testing.T) {
		f := must(t)(First(func(*http.Request) (string, error) { return "", broken }, byAddr))
		k, err := f(request("203.0.113.7:1"))
		if !errors.Is(err, broken) || errors.Is(err, ErrNoKey) || k != "" {
			t.Fatalf("got %q, %v; want the alternative's own error, not ErrNoKey", k, err)
		}
	})
}

// TestFirstNoCollision checks that a user and an anonymous client never
// share a key, whatever the user's id says.
func TestFirstNoCollision(t *testing.T) {
	f := must(t)(First(must(t)(Principal(userID)), must(t)(RemoteHost())))
	const addr = "203.0.113.7:1"
	anonymous, err := f(request(addr))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"203.0.113.7", anonymous, "ip6:2001:db8::/64", "user:42"} {
		k, err := f(signedIn(request(addr), id))
		if err != nil {
			t.Fatalf("user %q: %v", id, err)
		}
		if k == anonymous {
			t.Fatalf("user %q and the anonymous client at %s share key %q", id, addr, k)
		}
		if !strings.HasPrefix(k, "user:") {
			t.Fatalf("user %q: got key %q, want the prefix user:", id, k)
		}
	}
}

func TestFirstErrorNamesTheLast(t *testing.T) {
	f := must(t)(First(must(t)(Principal(userID)), must(t)(Header("X-API-Key"))))
	_, err := f(request("203.0.113.7:1"))
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "none of 2") || !strings.Contains(err.Error(), "X-Api-Key") {
		t.Fatalf("got %v, want ErrNoKey naming the count and the last alternative's problem", err)
	}
}

func TestFirstRejectsBadAlternatives(t *testing.T) {
	tests := []struct {
		name string
		fs   []Func
	}{
		{"none", nil},
		{"nil_alternative", []Func{fixed("a"), nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if f, err := First(tt.fs...); f != nil || !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("First(%d alternatives): got error %v, want one wrapping ErrInvalidOption", len(tt.fs), err)
			}
		})
	}
}

func BenchmarkFirst(b *testing.B) {
	byUser, err := Principal(userID)
	if err != nil {
		b.Fatal(err)
	}
	byAddr, err := RemoteHost()
	if err != nil {
		b.Fatal(err)
	}
	f, err := First(byUser, byAddr)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("signed_in", func(b *testing.B) {
		r := signedIn(request("203.0.113.7:52139"), "42")
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f(r)
		}
	})
	b.Run("anonymous", func(b *testing.B) {
		r := request("203.0.113.7:52139")
		b.ReportAllocs()
		for b.Loop() {
			_, _ = f(r)
		}
	})
}
