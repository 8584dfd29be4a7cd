package keyfunc

import "testing"

func TestParseHop(t *testing.T) {
	tests := []struct {
		name      string
		in        string
		forwarded bool
		want      string // "" means rejected
	}{
		{"ipv4", "198.51.100.9", false, "198.51.100.9"},
		{"ipv4_spaces", "  198.51.100.9 ", false, "198.51.100.9"},
		{"ipv4_port", "198.51.100.9:80", false, "198.51.100.9"},
		{"ipv6", "2001:db8::1", false, "2001:db8::1"},
		{"ipv6_zone_dropped", "fe80::1%eth0", false, "fe80::1"},
		{"ipv6_brackets", "[2001:db8::1]", false, "2001:db8::1"},
		{"ipv6_brackets_port", "[2001:db8::1]:443", false, "2001:db8::1"},
		{"v4_mapped_folded", "::ffff:198.51.100.9", false, "198.51.100.9"},
		{"v4_mapped_bracketed_folded", "[::ffff:198.51.100.9]:80", true, "198.51.100.9"},
		{"forwarded_unbracketed_ipv6", "2001:db8::1", true, ""},
		{"forwarded_obfuscated_port", "198.51.100.9:_p.1-x", true, "198.51.100.9"},
		{"obfuscated_port_outside_forwarded", "198.51.100.9:_p1", false, ""},
		{"obfuscated_port_bad_char", "198.51.100.9:_p!", true, ""},
		{"bare_underscore_port", "198.51.100.9:_", true, ""},
		{"ipv4_in_brackets", "[198.51.100.9]", false, ""},
		{"missing_bracket", "[2001:db8::1", false, ""},
		{"junk_after_bracket", "[2001:db8::1]x", false, ""},
		{"port_too_large", "198.51.100.9:65536", false, ""},
		{"empty_port", "198.51.100.9:", false, ""},
		{"unknown", "unknown", false, ""},
		{"obfuscated_node", "_hidden", true, ""},
		{"hostname", "example.com", false, ""},
		{"two_addresses", "1.1.1.1 2.2.2.2", false, ""},
		{"leading_zero", "198.051.100.9", false, ""},
		{"empty", "", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := parseHop(tt.in, tt.forwarded)
			got := ""
			if ok {
				got = a.String()
			}
			if got != tt.want {
				t.Fatalf("parseHop(%q, %v) = %q, want %q", tt.in, tt.forwarded, got, tt.want)
			}
		})
	}
}

func TestParseForwarded(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []forValue // nil with ok false means a syntax error
		ok   bool
	}{
		{"one", "for=1.1.1.1", []forValue{{"1.1.1.1", true}}, true},
		{"two_elements", "for=1.1.1.1, for=2.2.2.2", []forValue{{"1.1.1.1", true}, {"2.2.2.2", true}}, true},
		{"element_without_for", "proto=http, for=2.2.2.2", []forValue{{"", false}, {"2.2.2.2", true}}, true},
		{"empty_elements_skipped", ", ,for=1.1.1.1,", []forValue{{"1.1.1.1", true}}, true},
		{"empty_pairs_skipped", ";;for=1.1.1.1;", []forValue{{"1.1.1.1", true}}, true},
		{"quoted", `for="[2001:db8::1]:80"`, []forValue{{"[2001:db8::1]:80", true}}, true},
		{"escape", `for="a\"b"`, []forValue{{`a"b`, true}}, true},
		{"quoted_separators", `host="x;y,z";for=1.1.1.1`, []forValue{{"1.1.1.1", true}}, true},
		{"upper_case_name", "FOR=1.1.1.1", []forValue{{"1.1.1.1", true}}, true},
		{"space_before_equals", "for =1.1.1.1", nil, false},
		{"no_value", "for=", nil, false},
		{"unterminated", `for="1.1.1.1`, nil, false},
		{"escape_at_end", `for="1.1.1.1\`, nil, false},
		{"junk_after_value", "for=1.1.1.1 x", nil, false},
		{"two_for", "for=1.1.1.1;for=2.2.2.2", nil, false},
		{"empty", "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseForwarded(nil, tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("parseForwarded(%q) error %v, want ok %v", tt.in, err, tt.ok)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parseForwarded(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Fatalf("parseForwarded(%q) = %+v, want %+v", tt.in, got, tt.want)
				}
			}
		})
	}
}
