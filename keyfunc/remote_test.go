package keyfunc

import (
	"errors"
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestRemoteHost(t *testing.T) {
	tests := []struct {
		name       string
		opts       []Option
		remoteAddr string
		want       string // "" expects an error wrapping ErrNoKey
	}{
		{"ipv4_port_dropped", nil, "203.0.113.7:52139", "203.0.113.7"},
		{"ipv4_other_port_same_key", nil, "203.0.113.7:52140", "203.0.113.7"},
		{"ipv6_grouped_by_64", nil, "[2001:db8:1:2:aaaa:bbbb:cccc:dddd]:443", "ip6:2001:db8:1:2::/64"},
		{"ipv6_loopback", nil, "[::1]:52139", "ip6:::/64"},
		{"ipv6_zone_dropped", nil, "[fe80::1%eth0]:80", "ip6:fe80::/64"},
		{"v4_mapped_ipv6_folded_to_v4", nil, "[::ffff:203.0.113.7]:80", "203.0.113.7"},
		{"nat64_well_known_keyed_by_ipv4", nil, "[64:ff9b::203.0.113.7]:443", "203.0.113.7"},
		{"nat64_well_known_ipv4_prefix_24", []Option{WithIPv4Prefix(24)}, "[64:ff9b::203.0.113.7]:443", "203.0.113.0/24"},
		{"nat64_well_known_zone_dropped", nil, "[64:ff9b::203.0.113.7%eth0]:443", "203.0.113.7"},
		{"outside_nat64_96_grouped_by_64", nil, "[64:ff9b::1:cb00:7107]:443", "ip6:64:ff9b::/64"},
		// 192.0.2.33 is c0 00 | 02 21: bits 48-63, then 72-87 past the
		// zero u-octet.
		{"nat64_local_48_keyed_by_ipv4", nil, "[64:ff9b:1:c000:2:2100::]:443", "192.0.2.33"},
		{"nat64_local_48_u_octet_set_keyed_whole", nil, "[64:ff9b:1:c000:ff02:2100::]:443", "ip6:64:ff9b:1:c000:ff02:2100::/128"},
		{"nat64_local_longer_prefix_keyed_whole", nil, "[64:ff9b:1::c000:221]:443", "ip6:64:ff9b:1::c000:221/128"},
		{"ipv4_compatible_keyed_by_ipv4", nil, "[::203.0.113.7]:80", "203.0.113.7"},
		{"ipv4_compatible_lowest", nil, "[::2]:80", "0.0.0.2"},
		{"ipv6_unspecified_not_ipv4_compatible", nil, "[::]:80", "ip6:::/64"},
		{"ipv6_loopback_prefix_128", []Option{WithIPv6Prefix(128)}, "[::1]:80", "ip6:::1/128"},
		{"ipv6_prefix_48", []Option{WithIPv6Prefix(48)}, "[2001:db8:1:2::1]:80", "ip6:2001:db8:1::/48"},
		{"ipv6_prefix_128", []Option{WithIPv6Prefix(128)}, "[2001:db8::1]:80", "ip6:2001:db8::1/128"},
		{"ipv4_prefix_24", []Option{WithIPv4Prefix(24)}, "203.0.113.7:80", "203.0.113.0/24"},
		// A bare address is what chi's RealIP leaves in RemoteAddr.
		{"ipv4_bare", nil, "203.0.113.7", "203.0.113.7"},
		{"ipv4_bare_prefix_24", []Option{WithIPv4Prefix(24)}, "203.0.113.7", "203.0.113.0/24"},
		{"ipv6_bare_grouped_by_64", nil, "2001:db8::1", "ip6:2001:db8::/64"},
		{"ipv6_bare_bracketed", nil, "[2001:db8::1]", "ip6:2001:db8::/64"},
		{"ipv6_bare_zone_dropped", nil, "fe80::1%eth0", "ip6:fe80::/64"},
		{"v4_mapped_bare_folded_to_v4", nil, "::ffff:203.0.113.7", "203.0.113.7"},
		{"v4_mapped_bare_bracketed_folded_to_v4", nil, "[::ffff:203.0.113.7]", "203.0.113.7"},
		{"nat64_bare_keyed_by_ipv4", nil, "64:ff9b::203.0.113.7", "203.0.113.7"},
		{"ipv6_bare_last_group_not_a_port", nil, "2001:db8::1:80", "ip6:2001:db8::/64"},
		{"ipv4_bracketed_no_port", nil, "[203.0.113.7]", ""},
		{"ipv6_unclosed_bracket", nil, "[2001:db8::1", ""},
		{"empty_brackets", nil, "[]", ""},
		{"bracket_in_zone", nil, "[fe80::1%a]b]", ""},
		{"bracket_in_bare_zone", nil, "fe80::1%a]b", ""},
		{"hostname_bare", nil, "localhost", ""},
		{"ipv4_leading_zero_bare", nil, "203.0.113.07", ""},
		{"empty", nil, "", ""},
		{"hostname", nil, "localhost:80", ""},
		{"unix_socket", nil, "@", ""},
		{"port_not_number", nil, "203.0.113.7:http", ""},
		{"port_too_large", nil, "203.0.113.7:65536", ""},
		{"empty_port", nil, "203.0.113.7:", ""},
		{"garbage", nil, "not an address", ""},
		{"two_colons_v4", nil, "1.2.3.4:5:6", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := must(t)(RemoteHost(tt.opts...))
			checkKey(t, f, request(tt.remoteAddr), tt.want)
		})
	}
}

func TestRemoteHostIPv6RotationInsideSlash64(t *testing.T) {
	f := must(t)(RemoteHost())
	want := "ip6:2001:db8:aa:bb::/64"
	for _, addr := range []string{
		"[2001:db8:aa:bb::1]:1000",
		"[2001:db8:aa:bb::2]:1001",
		"[2001:db8:aa:bb:ffff:ffff:ffff:ffff]:1002",
		"[2001:db8:aa:bb:1234:5678:9abc:def0]:1003",
	} {
		checkKey(t, f, request(addr), want)
	}
	checkKey(t, f, request("[2001:db8:aa:bc::1]:1000"), "ip6:2001:db8:aa:bc::/64")
}

func TestOptionsRejected(t *testing.T) {
	header := func(opts ...Option) (Func, error) { return Header("X-Api-Key", opts...) }
	principal := func(opts ...Option) (Func, error) {
		return Principal(func(*http.Request) (string, bool) { return "", false }, opts...)
	}
	proxy := func(opts ...Option) (Func, error) {
		return TrustedProxy(XForwardedFor, []string{"10.0.0.0/8"}, opts...)
	}
	resolved := func(opts ...Option) (Func, error) {
		return ResolvedAddr(func(*http.Request) (netip.Addr, error) { return netip.Addr{}, nil }, opts...)
	}
	tests := []struct {
		name  string
		build func(...Option) (Func, error)
		opt   Option
		want  string // in the error: the option, named with its argument
	}{
		{"ipv6_prefix_0", RemoteHost, WithIPv6Prefix(0), "WithIPv6Prefix(0)"},
		{"ipv6_prefix_8", RemoteHost, WithIPv6Prefix(8), "WithIPv6Prefix(8)"},
		{"ipv6_prefix_129", RemoteHost, WithIPv6Prefix(129), "WithIPv6Prefix(129)"},
		{"ipv4_prefix_7", RemoteHost, WithIPv4Prefix(7), "WithIPv4Prefix(7)"},
		{"ipv4_prefix_33", RemoteHost, WithIPv4Prefix(33), "WithIPv4Prefix(33)"},
		{"max_len_under_hash", header, WithMaxKeyLen(70), "WithMaxKeyLen(70)"},
		{"nil_option", RemoteHost, nil, "nil"},
		// An option that does not concern the constructor is refused,
		// not ignored.
		{"header_ipv6_prefix_does_not_apply", header, WithIPv6Prefix(48), "WithIPv6Prefix(48) does not apply"},
		{"header_ipv4_prefix_does_not_apply", header, WithIPv4Prefix(24), "WithIPv4Prefix(24) does not apply"},
		{"principal_ipv6_prefix_does_not_apply", principal, WithIPv6Prefix(48), "WithIPv6Prefix(48) does not apply"},
		{"principal_ipv4_prefix_does_not_apply", principal, WithIPv4Prefix(24), "WithIPv4Prefix(24) does not apply"},
		{"remote_host_max_len_does_not_apply", RemoteHost, WithMaxKeyLen(100), "WithMaxKeyLen(100) does not apply"},
		{"remote_host_hashed_does_not_apply", RemoteHost, WithHashedValues(), "WithHashedValues() does not apply"},
		{"trusted_proxy_max_len_does_not_apply", proxy, WithMaxKeyLen(100), "WithMaxKeyLen(100) does not apply"},
		{"trusted_proxy_hashed_does_not_apply", proxy, WithHashedValues(), "WithHashedValues() does not apply"},
		{"resolved_addr_max_len_does_not_apply", resolved, WithMaxKeyLen(100), "WithMaxKeyLen(100) does not apply"},
		{"resolved_addr_hashed_does_not_apply", resolved, WithHashedValues(), "WithHashedValues() does not apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.build(tt.opt)
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("got error %v, want ErrInvalidOption", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got error %q, want one naming %q", err, tt.want)
			}
		})
	}
}
