package keyfunc

import (
	"errors"
	"testing"
)

// trusted is the proxy tier of these tests: 10.0.0.0/8 and 2001:db8:ffff::/48.
var trusted = []string{"10.0.0.0/8", "2001:db8:ffff::/48"}

const proxyPeer = "10.0.0.2:40000"

func TestTrustedProxySpoofingFromUntrustedPeer(t *testing.T) {
	tests := []struct {
		name string
		src  Source
		hdr  []string
	}{
		{"x_forwarded_for_ignored", XForwardedFor, []string{"X-Forwarded-For", "198.51.100.9"}},
		{"x_forwarded_for_chain_ignored", XForwardedFor, []string{"X-Forwarded-For", "198.51.100.9, 10.0.0.5"}},
		{"forwarded_ignored", Forwarded, []string{"Forwarded", "for=198.51.100.9"}},
		{"forwarded_ipv6_ignored", Forwarded, []string{"Forwarded", `for="[2001:db8::9]:443"`}},
		{"x_real_ip_ignored", XRealIP, []string{"X-Real-IP", "198.51.100.9"}},
		{"garbage_header_ignored", XForwardedFor, []string{"X-Forwarded-For", "not-an-ip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := must(t)(TrustedProxy(tt.src, trusted))
			// The attacker connects directly from 203.0.113.7.
			checkKey(t, f, request("203.0.113.7:5555", tt.hdr...), "203.0.113.7")
		})
	}
}

func TestTrustedProxyXForwardedFor(t *testing.T) {
	f := must(t)(TrustedProxy(XForwardedFor, trusted))
	tests := []struct {
		name string
		hdr  []string
		want string
	}{
		{"single_client", []string{"X-Forwarded-For", "198.51.100.9"}, "198.51.100.9"},
		{"client_spoof_left_ignored", []string{"X-Forwarded-For", "1.1.1.1, 198.51.100.9"}, "198.51.100.9"},
		{"trusted_hops_skipped", []string{"X-Forwarded-For", "198.51.100.9, 10.1.1.1, 10.2.2.2"}, "198.51.100.9"},
		{"two_header_lines_merged", []string{"X-Forwarded-For", "1.1.1.1", "X-Forwarded-For", "198.51.100.9, 10.1.1.1"}, "198.51.100.9"},
		{"ipv6_client_grouped", []string{"X-Forwarded-For", "2001:db8:1:2::99"}, "ip6:2001:db8:1:2::/64"},
		{"ipv6_trusted_hop_skipped", []string{"X-Forwarded-For", "198.51.100.9, 2001:db8:ffff::1"}, "198.51.100.9"},
		{"v4_mapped_client_folded", []string{"X-Forwarded-For", "::ffff:198.51.100.9"}, "198.51.100.9"},
		{"nat64_client_keyed_by_ipv4", []string{"X-Forwarded-For", "64:ff9b::198.51.100.9"}, "198.51.100.9"},
		{"nat64_hop_not_a_trusted_ipv4_proxy", []string{"X-Forwarded-For", "198.51.100.9, 64:ff9b::10.1.1.1"}, "10.1.1.1"},
		{"v4_mapped_trusted_hop_folded", []string{"X-Forwarded-For", "198.51.100.9, ::ffff:10.1.1.1"}, "198.51.100.9"},
		{"port_dropped", []string{"X-Forwarded-For", "198.51.100.9:1234"}, "198.51.100.9"},
		{"bracketed_ipv6_port", []string{"X-Forwarded-For", "[2001:db8:1:2::99]:443"}, "ip6:2001:db8:1:2::/64"},
		{"empty_entries_skipped", []string{"X-Forwarded-For", " , 198.51.100.9 ,"}, "198.51.100.9"},
		{"all_trusted_leftmost", []string{"X-Forwarded-For", "10.9.9.9, 10.1.1.1"}, "10.9.9.9"},
		{"garbage_left_of_client_unread", []string{"X-Forwarded-For", "garbage, 198.51.100.9"}, "198.51.100.9"},
		{"garbage_before_client_fails", []string{"X-Forwarded-For", "198.51.100.9, garbage, 10.1.1.1"}, ""},
		{"unknown_fails", []string{"X-Forwarded-For", "unknown"}, ""},
		{"missing_fails", nil, ""},
		{"empty_fails", []string{"X-Forwarded-For", " , "}, ""},
		{"hostname_fails", []string{"X-Forwarded-For", "example.com"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, f, request(proxyPeer, tt.hdr...), tt.want)
		})
	}
}

func TestTrustedProxyForwarded(t *testing.T) {
	f := must(t)(TrustedProxy(Forwarded, trusted))
	tests := []struct {
		name string
		hdr  []string
		want string
	}{
		{"ipv4", []string{"Forwarded", "for=198.51.100.9"}, "198.51.100.9"},
		{"case_insensitive_name", []string{"Forwarded", "For=198.51.100.9"}, "198.51.100.9"},
		{"with_other_params", []string{"Forwarded", "by=10.0.0.2;for=198.51.100.9;proto=https;host=example.com"}, "198.51.100.9"},
		{"quoted_ipv4_port", []string{"Forwarded", `for="198.51.100.9:4711"`}, "198.51.100.9"},
		{"quoted_bracketed_ipv6", []string{"Forwarded", `for="[2001:db8:cafe::17]"`}, "ip6:2001:db8:cafe::/64"},
		{"quoted_bracketed_ipv6_port", []string{"Forwarded", `for="[2001:db8:cafe::17]:4711"`}, "ip6:2001:db8:cafe::/64"},
		{"obfuscated_port", []string{"Forwarded", `for="198.51.100.9:_p1"`}, "198.51.100.9"},
		{"bare_bracketed_ipv6_lenient", []string{"Forwarded", "for=[2001:db8:cafe::17]:4711"}, "ip6:2001:db8:cafe::/64"},
		{"rightmost_untrusted", []string{"Forwarded", "for=1.1.1.1, for=198.51.100.9;by=10.0.0.2, for=10.3.3.3"}, "198.51.100.9"},
		{"two_lines", []string{"Forwarded", "for=1.1.1.1", "Forwarded", "for=198.51.100.9"}, "198.51.100.9"},
		{"quoted_comma_inside_value", []string{"Forwarded", `host="a,b";for=198.51.100.9`}, "198.51.100.9"},
		{"escaped_quote_in_value", []string{"Forwarded", `host="a\"b";for=198.51.100.9`}, "198.51.100.9"},
		{"spaces_around_separators", []string{"Forwarded", "for=1.1.1.1 ,  for=198.51.100.9 ; proto=http"}, "198.51.100.9"},
		{"all_trusted_leftmost", []string{"Forwarded", "for=10.9.9.9, for=10.1.1.1"}, "10.9.9.9"},
		{"unknown_fails", []string{"Forwarded", "for=unknown"}, ""},
		{"unknown_behind_client_fails", []string{"Forwarded", "for=198.51.100.9, for=unknown"}, ""},
		{"obfuscated_node_fails", []string{"Forwarded", "for=_hidden"}, ""},
		{"obfuscated_quoted_fails", []string{"Forwarded", `for="_hidden:_p1"`}, ""},
		{"no_for_fails", []string{"Forwarded", "proto=https;by=10.0.0.2"}, ""},
		{"element_without_for_fails", []string{"Forwarded", "for=198.51.100.9, proto=https"}, ""},
		{"two_for_in_element_fails", []string{"Forwarded", "for=1.1.1.1;for=198.51.100.9"}, ""},
		{"unterminated_quote_fails", []string{"Forwarded", `for="198.51.100.9, for=10.1.1.1`}, ""},
		{"missing_value_fails", []string{"Forwarded", "for="}, ""},
		{"missing_equals_fails", []string{"Forwarded", "for"}, ""},
		{"unbracketed_ipv6_fails", []string{"Forwarded", `for="2001:db8::1:80"`}, ""},
		{"unbracketed_v4_mapped_fails", []string{"Forwarded", `for="::ffff:198.51.100.9"`}, ""},
		{"missing_header_fails", nil, ""},
		{"empty_header_fails", []string{"Forwarded", ""}, ""},
		{"control_char_fails", []string{"Forwarded", "for=\"1.1.1.1\x01\""}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, f, request(proxyPeer, tt.hdr...), tt.want)
		})
	}
}

func TestTrustedProxyXRealIP(t *testing.T) {
	f := must(t)(TrustedProxy(XRealIP, trusted))
	tests := []struct {
		name string
		hdr  []string
		want string
	}{
		{"ipv4", []string{"X-Real-IP", "198.51.100.9"}, "198.51.100.9"},
		{"ipv6_grouped", []string{"X-Real-IP", "2001:db8:1:2::99"}, "ip6:2001:db8:1:2::/64"},
		{"last_of_repeated_wins", []string{"X-Real-IP", "1.1.1.1", "X-Real-IP", "198.51.100.9"}, "198.51.100.9"},
		{"list_fails", []string{"X-Real-IP", "1.1.1.1, 198.51.100.9"}, ""},
		{"missing_fails", nil, ""},
		{"empty_fails", []string{"X-Real-IP", ""}, ""},
		{"garbage_fails", []string{"X-Real-IP", "garbage"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, f, request(proxyPeer, tt.hdr...), tt.want)
		})
	}
}

func TestTrustedProxyPeer(t *testing.T) {
	tests := []struct {
		name       string
		remoteAddr string
		want       string
	}{
		{"v4_mapped_peer_trusted", "[::ffff:10.0.0.2]:40000", "198.51.100.9"},
		// A translator chose that address, not the proxy: it is not
		// inside 10.0.0.0/8, and is keyed as the IPv4 client it carries.
		{"nat64_peer_not_a_trusted_ipv4_proxy", "[64:ff9b::10.0.0.2]:40000", "10.0.0.2"},
		{"ipv6_peer_trusted", "[2001:db8:ffff::2]:40000", "198.51.100.9"},
		{"zoned_peer_checked_without_zone", "[2001:db8:ffff::2%eth0]:40000", "198.51.100.9"},
		{"peer_outside_prefix", "11.0.0.2:40000", "11.0.0.2"},
		// A bare peer address (a middleware rewrote RemoteAddr) is a peer
		// like any other.
		{"bare_peer_trusted", "10.0.0.2", "198.51.100.9"},
		{"bare_peer_outside_prefix", "11.0.0.2", "11.0.0.2"},
		{"peer_not_an_address_fails", "proxy.internal", ""},
		{"peer_empty_port_fails", "10.0.0.2:", ""},
	}
	f := must(t)(TrustedProxy(XForwardedFor, trusted))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkKey(t, f, request(tt.remoteAddr, "X-Forwarded-For", "198.51.100.9"), tt.want)
		})
	}
}

func TestTrustedProxyConfig(t *testing.T) {
	tests := []struct {
		name    string
		src     Source
		trusted []string
		ok      bool
	}{
		{"cidr", XForwardedFor, []string{"10.0.0.0/8"}, true},
		{"bare_address", XForwardedFor, []string{"10.0.0.2"}, true},
		{"unmasked_prefix", XForwardedFor, []string{"10.1.2.3/8"}, true},
		{"v4_mapped_prefix", XForwardedFor, []string{"::ffff:10.0.0.0/104"}, true},
		{"no_prefix", XForwardedFor, nil, false},
		{"bad_prefix", XForwardedFor, []string{"10.0.0.0/33"}, false},
		{"garbage_prefix", XForwardedFor, []string{"proxy.internal"}, false},
		{"zoned_address", XForwardedFor, []string{"fe80::1%eth0"}, false},
		{"zero_source", 0, []string{"10.0.0.0/8"}, false},
		{"unknown_source", XRealIP + 1, []string{"10.0.0.0/8"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := TrustedProxy(tt.src, tt.trusted)
			if tt.ok && err != nil {
				t.Fatalf("TrustedProxy(%v, %q): %v", tt.src, tt.trusted, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("TrustedProxy(%v, %q): got %v, want ErrInvalidOption", tt.src, tt.trusted, err)
			}
		})
	}
}

// TestTrustedProxyMappedPrefix checks that a prefix written in IPv4-mapped
// form trusts the plain IPv4 peer, since peers are folded to IPv4.
func TestTrustedProxyMappedPrefix(t *testing.T) {
	f := must(t)(TrustedProxy(XRealIP, []string{"::ffff:10.0.0.0/104"}))
	checkKey(t, f, request("10.0.0.2:1", "X-Real-IP", "198.51.100.9"), "198.51.100.9")
	checkKey(t, f, request("11.0.0.2:1", "X-Real-IP", "198.51.100.9"), "11.0.0.2")
}

func TestSourceName(t *testing.T) {
	for src, want := range map[Source]string{XForwardedFor: "X-Forwarded-For", Forwarded: "Forwarded", XRealIP: "X-Real-IP", 9: "Source(9)"} {
		if got := src.name(); got != want {
			t.Errorf("Source(%d).name() = %q, want %q", int(src), got, want)
		}
	}
}

// TestTrustedProxyIPv6RotationInsideSlash64 checks that a client behind
// the proxy that rotates through its /64 keeps one key in every header
// form.
func TestTrustedProxyIPv6RotationInsideSlash64(t *testing.T) {
	tests := []struct {
		name   string
		src    Source
		header string
		format func(addr string) string
	}{
		{"x_forwarded_for", XForwardedFor, "X-Forwarded-For", func(a string) string { return a + ", 10.1.1.1" }},
		{"forwarded", Forwarded, "Forwarded", func(a string) string { return `for="[` + a + `]:4711"` }},
		{"x_real_ip", XRealIP, "X-Real-IP", func(a string) string { return a }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := must(t)(TrustedProxy(tt.src, trusted))
			for _, a := range []string{"2001:db8:5:6::1", "2001:db8:5:6::2", "2001:db8:5:6:ffff:ffff:ffff:ffff", "2001:db8:5:6:abcd::9"} {
				checkKey(t, f, request(proxyPeer, tt.header, tt.format(a)), "ip6:2001:db8:5:6::/64")
			}
		})
	}
}
