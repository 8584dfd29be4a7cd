package keyfunc

import (
	"errors"
	"net/http"
	"net/netip"
	"testing"
)

func TestResolvedAddr(t *testing.T) {
	errGone := errors.New("resolver: gone")
	tests := []struct {
		name string
		addr netip.Addr
		err  error
		opts []Option
		want string // "" means an error wrapping ErrNoKey
	}{
		{"ipv4", netip.MustParseAddr("203.0.113.7"), nil, nil, "203.0.113.7"},
		{"v4_mapped_folded", netip.MustParseAddr("::ffff:203.0.113.7"), nil, nil, "203.0.113.7"},
		{"ipv6_zone_dropped_grouped", netip.MustParseAddr("fe80::1%eth0"), nil, nil, "ip6:fe80::/64"},
		{"ipv4_prefix_option", netip.MustParseAddr("203.0.113.7"), nil, []Option{WithIPv4Prefix(24)}, "203.0.113.0/24"},
		{"invalid_addr", netip.Addr{}, nil, nil, ""},
		{"resolver_error", netip.MustParseAddr("203.0.113.7"), errGone, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := must(t)(ResolvedAddr(func(*http.Request) (netip.Addr, error) { return tt.addr, tt.err }, tt.opts...))
			checkKey(t, f, request("192.0.2.1:1"), tt.want)
			if tt.err != nil {
				if _, err := f(request("192.0.2.1:1")); !errors.Is(err, tt.err) {
					t.Fatalf("got error %v; want one wrapping %v", err, tt.err)
				}
			}
		})
	}
}

func TestResolvedAddrConfig(t *testing.T) {
	if _, err := ResolvedAddr(nil); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("ResolvedAddr(nil): got error %v, want one wrapping ErrInvalidOption", err)
	}
	ok := func(*http.Request) (netip.Addr, error) { return netip.Addr{}, nil }
	if _, err := ResolvedAddr(ok, WithIPv6Prefix(8)); !errors.Is(err, ErrInvalidOption) {
		t.Fatalf("ResolvedAddr(WithIPv6Prefix(8)): got error %v, want one wrapping ErrInvalidOption", err)
	}
}
