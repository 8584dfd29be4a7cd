package addrkey

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct {
		name           string
		addr           string
		v4Bits, v6Bits int
		want           string
	}{
		{"ipv4_whole", "203.0.113.7", 32, 64, "203.0.113.7"},
		{"ipv4_prefix_24", "203.0.113.7", 24, 64, "203.0.113.0/24"},
		{"ipv6_grouped_by_64", "2001:db8:1:2:aaaa:bbbb:cccc:dddd", 32, 64, "ip6:2001:db8:1:2::/64"},
		{"ipv6_prefix_48", "2001:db8:1:2::1", 32, 48, "ip6:2001:db8:1::/48"},
		{"ipv6_prefix_128", "2001:db8::1", 32, 128, "ip6:2001:db8::1/128"},
		{"ipv6_loopback", "::1", 32, 64, "ip6:::/64"},
		{"ipv6_loopback_prefix_128", "::1", 32, 128, "ip6:::1/128"},
		{"ipv6_zone_dropped", "fe80::1%eth0", 32, 64, "ip6:fe80::/64"},
		{"v4_mapped_ipv6_folded_to_v4", "::ffff:203.0.113.7", 32, 64, "203.0.113.7"},
		{"nat64_well_known_keyed_by_ipv4", "64:ff9b::203.0.113.7", 32, 64, "203.0.113.7"},
		{"nat64_well_known_ipv4_prefix_24", "64:ff9b::203.0.113.7", 24, 64, "203.0.113.0/24"},
		{"nat64_well_known_zone_dropped", "64:ff9b::203.0.113.7%eth0", 32, 64, "203.0.113.7"},
		{"outside_nat64_96_grouped_by_64", "64:ff9b::1:cb00:7107", 32, 64, "ip6:64:ff9b::/64"},
		// 192.0.2.33 is c0 00 | 02 21: bits 48-63, then 72-87 past the
		// zero u-octet.
		{"nat64_local_48_keyed_by_ipv4", "64:ff9b:1:c000:2:2100::", 32, 64, "192.0.2.33"},
		{"nat64_local_48_u_octet_set_keyed_whole", "64:ff9b:1:c000:ff02:2100::", 32, 64, "ip6:64:ff9b:1:c000:ff02:2100::/128"},
		{"nat64_local_longer_prefix_keyed_whole", "64:ff9b:1::c000:221", 32, 64, "ip6:64:ff9b:1::c000:221/128"},
		{"ipv4_compatible_keyed_by_ipv4", "::203.0.113.7", 32, 64, "203.0.113.7"},
		{"ipv4_compatible_lowest", "::2", 32, 64, "0.0.0.2"},
		{"ipv6_unspecified_not_ipv4_compatible", "::", 32, 64, "ip6:::/64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := netip.MustParseAddr(tt.addr)
			if got := Key(Normalize(a), tt.v4Bits, tt.v6Bits); got != tt.want {
				t.Fatalf("Key(Normalize(%s), %d, %d) = %q, want %q", tt.addr, tt.v4Bits, tt.v6Bits, got, tt.want)
			}
		})
	}
}

// TestKeyTranslatedClientsKeptApart: IPv4 clients behind one NAT64
// translator, or with IPv4-compatible addresses, share a /64 but are
// different clients, each with its own key.
func TestKeyTranslatedClientsKeptApart(t *testing.T) {
	for _, tt := range []struct {
		name, a, b string
	}{
		{"nat64_well_known", "64:ff9b::198.51.100.9", "64:ff9b::198.51.100.10"},
		{"nat64_local_48", "64:ff9b:1:c633:64:900::", "64:ff9b:1:c633:64:a00::"},
		{"nat64_local_longer_prefix", "64:ff9b:1:0:1::c633:6409", "64:ff9b:1:0:1::c633:640a"},
		{"ipv4_compatible", "::198.51.100.9", "::198.51.100.10"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ka := Key(Normalize(netip.MustParseAddr(tt.a)), 32, 64)
			kb := Key(Normalize(netip.MustParseAddr(tt.b)), 32, 64)
			if ka == kb {
				t.Fatalf("%s and %s share the key %q, want one each", tt.a, tt.b, ka)
			}
		})
	}
}

// FuzzKeyOneFormPerIPv4Client checks that an IPv4 client has one key
// whether it is seen as itself, mapped, through a NAT64 translator
// (well-known /96 or local-use /48 prefix) or IPv4-compatible.
func FuzzKeyOneFormPerIPv4Client(f *testing.F) {
	f.Add(byte(198), byte(51), byte(100), byte(9))
	f.Add(byte(0), byte(0), byte(0), byte(1))
	f.Fuzz(func(t *testing.T, a, b, c, d byte) {
		v4 := netip.AddrFrom4([4]byte{a, b, c, d})
		want := v4.String()
		for _, form := range Forms(v4) {
			if k := Key(Normalize(form), 32, 64); k != want {
				t.Fatalf("Key of %v = %q, want %q", form, k, want)
			}
		}
	})
}

func BenchmarkKey(b *testing.B) {
	for _, addr := range []string{"203.0.113.7", "2001:db8:1:2::7", "::ffff:203.0.113.7"} {
		a := netip.MustParseAddr(addr)
		b.Run(addr, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = Key(Normalize(a), 32, 64)
			}
		})
	}
}
