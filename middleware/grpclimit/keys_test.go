package grpclimit_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fixedwindow/ratelimit/keyfunc"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// fromPeer returns a context whose call comes from addr.
func fromPeer(addr net.Addr) context.Context {
	return peer.NewContext(context.Background(), &peer.Peer{Addr: addr})
}

// withMetadata returns a context whose call carries the metadata pairs.
func withMetadata(pairs ...string) context.Context {
	return metadata.NewIncomingContext(context.Background(), metadata.Pairs(pairs...))
}

// checkKey runs f on ctx and compares with want; want "" means an error
// wrapping keyfunc.ErrNoKey.
func checkKey(t *testing.T, f grpclimit.KeyFunc, ctx context.Context, want string) {
	t.Helper()
	got, err := f(ctx, checkMethod)
	switch {
	case want == "" && (got != "" || !errors.Is(err, keyfunc.ErrNoKey)):
		t.Fatalf("got %q, %v; want an error wrapping keyfunc.ErrNoKey", got, err)
	case want != "" && (err != nil || got != want):
		t.Fatalf("got %q, %v; want %q", got, err, want)
	}
}

// TestPeerHostKeysAsRemoteHost: a peer's key is the key keyfunc.RemoteHost
// gives an HTTP request from the same address.
func TestPeerHostKeysAsRemoteHost(t *testing.T) {
	remote := must(t)(keyfunc.RemoteHost())
	for _, tt := range []struct {
		name string
		addr string
	}{
		{"ipv4", "203.0.113.7:52139"},
		{"ipv6_grouped_by_64", "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443"},
		{"v4_mapped_ipv6_folded_to_v4", "[::ffff:203.0.113.7]:80"},
		{"ipv6_zone_dropped", "[fe80::1%eth0]:80"},
		{"nat64_keyed_by_ipv4", "[64:ff9b::203.0.113.7]:443"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := remote(&http.Request{RemoteAddr: tt.addr})
			if err != nil {
				t.Fatal(err)
			}
			tcp, err := net.ResolveTCPAddr("tcp", tt.addr)
			if err != nil {
				t.Fatal(err)
			}
			checkKey(t, grpclimit.PeerHost(), fromPeer(tcp), want)
		})
	}
	t.Run("no_peer", func(t *testing.T) { checkKey(t, grpclimit.PeerHost(), context.Background(), "") })
	t.Run("unix_socket", func(t *testing.T) {
		checkKey(t, grpclimit.PeerHost(), fromPeer(&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}), "")
	})
}

// TestMetadataKeysAsHeader: a metadata entry's key is the key
// keyfunc.Header gives the header of that name, under the same options.
func TestMetadataKeysAsHeader(t *testing.T) {
	long := strings.Repeat("k", 300)
	for _, tc := range []struct {
		name string
		opts []keyfunc.Option
	}{
		{"default", nil},
		{"hashed_values", []keyfunc.Option{keyfunc.WithHashedValues()}},
		{"max_key_len_80", []keyfunc.Option{keyfunc.WithMaxKeyLen(80)}},
	} {
		header := must(t)(keyfunc.Header("X-API-Key", tc.opts...))
		for _, v := range []string{"k-123", "  k-123 ", strings.Repeat("k", 90), long} {
			want, err := header(&http.Request{Header: http.Header{"X-Api-Key": {v}}})
			if err != nil {
				t.Fatal(err)
			}
			checkKey(t, grpclimit.Must(grpclimit.Metadata("X-API-Key", tc.opts...)), withMetadata("x-api-key", v), want)
		}
	}
	for _, opt := range []keyfunc.Option{keyfunc.WithIPv4Prefix(24), keyfunc.WithMaxKeyLen(10), nil} {
		if _, err := grpclimit.Metadata("x-api-key", opt); !errors.Is(err, grpclimit.ErrInvalidOption) || !errors.Is(err, keyfunc.ErrInvalidOption) {
			t.Errorf("Metadata with a bad option: %v, want grpclimit's and keyfunc's ErrInvalidOption", err)
		}
	}
	f := grpclimit.Must(grpclimit.Metadata("x-api-key"))
	for _, tt := range []struct {
		name string
		ctx  context.Context
	}{
		{"none", context.Background()},
		{"absent", withMetadata("other", "v")},
		{"empty", withMetadata("x-api-key", " ")},
		{"twice", withMetadata("x-api-key", "a", "x-api-key", "b")},
	} {
		t.Run(tt.name, func(t *testing.T) { checkKey(t, f, tt.ctx, "") })
	}
	for _, name := range []string{"", "x api key", "x-key-bin", "grpc-timeout", "x:key"} {
		if _, err := grpclimit.Metadata(name); !errors.Is(err, grpclimit.ErrInvalidOption) {
			t.Errorf("Metadata(%q): %v, want ErrInvalidOption", name, err)
		}
	}
}

type userKey struct{}

func userID(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(userKey{}).(string)
	return id, ok
}

// TestPrincipalFirstJoin: the composed keys are keyfunc's for the same
// identities.
func TestPrincipalFirstJoin(t *testing.T) {
	principal := grpclimit.Must(grpclimit.Principal(userID))
	tcp := &net.TCPAddr{IP: net.ParseIP("203.0.113.7"), Port: 1}
	signedIn := context.WithValue(fromPeer(tcp), userKey{}, "42")
	anonymous := fromPeer(tcp)
	userOrPeer := grpclimit.Must(grpclimit.First(principal, grpclimit.PeerHost()))
	joined := grpclimit.Must(grpclimit.Join(grpclimit.PeerHost(), principal))
	broken := errors.New("session store down")
	failing := func(context.Context, string) (string, error) { return "", broken }

	checkKey(t, principal, signedIn, "user:42")
	checkKey(t, principal, anonymous, "")
	checkKey(t, userOrPeer, signedIn, "user:42")
	checkKey(t, userOrPeer, anonymous, "203.0.113.7")
	checkKey(t, joined, signedIn, "join:11:203.0.113.7,7:user:42,")
	checkKey(t, joined, anonymous, "")
	if k, err := grpclimit.Must(grpclimit.First(failing, grpclimit.PeerHost()))(anonymous, checkMethod); !errors.Is(err, broken) || errors.Is(err, keyfunc.ErrNoKey) || k != "" {
		t.Fatalf("First over a failing alternative: %q, %v; want its error, not ErrNoKey", k, err)
	}
	for name, err := range map[string]error{
		"Principal(nil)": second(grpclimit.Principal(nil)),
		"First()":        second(grpclimit.First()),
		"First(nil)":     second(grpclimit.First(nil)),
		"Join()":         second(grpclimit.Join()),
		"Join(f, nil)":   second(grpclimit.Join(principal, nil)),
	} {
		if !errors.Is(err, grpclimit.ErrInvalidOption) {
			t.Errorf("%s: %v, want ErrInvalidOption", name, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Must of an error did not panic")
		}
	}()
	grpclimit.Must(grpclimit.Metadata(""))
}

func second(_ grpclimit.KeyFunc, err error) error { return err }
