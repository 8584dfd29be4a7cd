package keyfunc

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/addrkey"
)

// checkFuzzResult checks the contract every Func keeps: an error wraps
// ErrNoKey and comes with no key; otherwise the key is not empty.
func checkFuzzResult(t *testing.T, key string, err error) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrNoKey) {
			t.Fatalf("error %v does not wrap ErrNoKey", err)
		}
		if key != "" {
			t.Fatalf("key %q returned with error %v", key, err)
		}
		return
	}
	if key == "" {
		t.Fatal("empty key with nil error")
	}
}

// checkAddrKey checks that key names exactly one client in canonical
// form, a bare IPv4 address or "ip6:" and a /64 prefix (a whole address
// inside the local-use NAT64 prefix), and returns that address or prefix.
// No IPv6 key holds an address that only carries an IPv4 client.
func checkAddrKey(t *testing.T, key string) netip.Prefix {
	t.Helper()
	switch {
	case !strings.Contains(key, ":"):
		a, err := netip.ParseAddr(key)
		if err != nil || !a.Is4() || a.String() != key {
			t.Fatalf("key %q is not one canonical IPv4 address", key)
		}
		return netip.PrefixFrom(a, 32)
	case strings.HasPrefix(key, "ip6:"):
		p, err := netip.ParsePrefix(key[4:])
		bits := 64
		if addrkey.NAT64Local.Contains(p.Addr()) {
			bits = 128
		}
		if err != nil || !p.Addr().Is6() || p.Addr().Is4In6() || p.Bits() != bits || p.Masked() != p || p.String() != key[4:] {
			t.Fatalf("key %q is not ip6: and one canonical /%d", key, bits)
		}
		if _, ok := addrkey.EmbeddedIPv4(p.Addr()); ok || addrkey.NAT64WellKnown.Contains(p.Addr()) {
			t.Fatalf("key %q is an IPv6 key for a translated IPv4 client", key)
		}
		return p
	}
	t.Fatalf("key %q is not an address key", key)
	return netip.Prefix{}
}

// candidateKeys returns the key of every entry of a comma-separated list
// that parses as an address: a forwarded client key must be one of them.
func candidateKeys(c *config, lines []string, forwarded bool) map[string]bool {
	out := map[string]bool{}
	for _, line := range lines {
		for _, e := range strings.Split(line, ",") {
			if a, ok := parseHop(e, forwarded); ok {
				out[c.addrKey(a)] = true
			}
		}
	}
	return out
}

func FuzzRemoteAddr(f *testing.F) {
	for _, s := range []string{
		"203.0.113.7:52139", "[2001:db8::1]:443", "[fe80::1%eth0]:80", "[::ffff:1.2.3.4]:80",
		"1.2.3.4", "[::1]", "", "@", "localhost:80", "1.2.3.4:99999", "[1.2.3.4]:80",
		"2001:db8::1", "[2001:db8::1]", "fe80::1%eth0", "[1.2.3.4]", "[]",
	} {
		f.Add(s)
	}
	key, err := RemoteHost()
	if err != nil {
		f.Fatal(err)
	}
	c, _ := newConfig("test", addrKind, nil)
	f.Fuzz(func(t *testing.T, remoteAddr string) {
		k, err := key(&http.Request{RemoteAddr: remoteAddr})
		checkFuzzResult(t, k, err)
		if err != nil {
			return
		}
		checkAddrKey(t, k)
		// The key depends on the host only: the same host on another port
		// has the same key.
		host, _, err := net.SplitHostPort(remoteAddr)
		if err != nil { // a bare address, bracketed or not
			host = strings.TrimSuffix(strings.TrimPrefix(remoteAddr, "["), "]")
		}
		k2, err := key(&http.Request{RemoteAddr: net.JoinHostPort(host, "1")})
		if err != nil || k2 != k {
			t.Fatalf("host %q: port 1 gives %q, %v; want %q", host, k2, err, k)
		}
		a, _ := netip.ParseAddr(host)
		if want := c.addrKey(normalize(a)); k != want {
			t.Fatalf("RemoteAddr %q: key %q, want %q", remoteAddr, k, want)
		}
	})
}

// FuzzTranslatedIPv4 checks that an IPv4 client has one key whether it
// arrives as itself, mapped, through a NAT64 translator (well-known /96 or
// local-use /48 prefix) or IPv4-compatible, under RemoteHost and as a
// forwarded client.
func FuzzTranslatedIPv4(f *testing.F) {
	f.Add(byte(198), byte(51), byte(100), byte(9))
	f.Add(byte(0), byte(0), byte(0), byte(1))
	f.Add(byte(10), byte(0), byte(0), byte(2))
	remote, err := RemoteHost()
	if err != nil {
		f.Fatal(err)
	}
	xff, err := TrustedProxy(XForwardedFor, []string{"10.0.0.0/8"})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, a, b, c, d byte) {
		v4 := netip.AddrFrom4([4]byte{a, b, c, d})
		want := v4.String()
		for _, form := range addrkey.Forms(v4) {
			k, err := remote(&http.Request{RemoteAddr: netip.AddrPortFrom(form, 443).String()})
			if err != nil || k != want {
				t.Fatalf("RemoteHost of %v: %q, %v; want %q", form, k, err, want)
			}
			k, err = xff(&http.Request{RemoteAddr: "10.0.0.2:1", Header: http.Header{"X-Forwarded-For": {form.String()}}})
			if err != nil || k != want {
				t.Fatalf("forwarded %v: %q, %v; want %q", form, k, err, want)
			}
		}
	})
}

func FuzzXForwardedFor(f *testing.F) {
	for _, s := range []string{
		"198.51.100.9", "1.1.1.1, 198.51.100.9", "198.51.100.9, 10.1.1.1", "unknown", "garbage, 198.51.100.9",
		"198.51.100.9, garbage, 10.1.1.1", "[2001:db8::1]:443", "::ffff:10.1.1.1", " , ", "10.1.1.1, 10.2.2.2",
		"198.51.100.9:80", "fe80::1%eth0",
	} {
		f.Add(s, "")
	}
	f.Add("1.1.1.1", "198.51.100.9, 10.0.0.9")
	fuzzForwarding(f, XForwardedFor, "X-Forwarded-For", false)
}

func FuzzForwarded(f *testing.F) {
	for _, s := range []string{
		"for=198.51.100.9", `for="[2001:db8:cafe::17]:4711"`, "for=1.1.1.1, for=198.51.100.9;by=10.0.0.2",
		"for=unknown", "for=_hidden", `for="_hidden:_p"`, `host="a,b";for=198.51.100.9`, `for="198.51.100.9, for=10.1.1.1`,
		"proto=https", "for=1.1.1.1;for=2.2.2.2", `for="198.51.100.9:_p1"`, `for="\1\9\8.51.100.9"`, "for=[::1]:80",
	} {
		f.Add(s, "")
	}
	f.Add("for=1.1.1.1", "for=198.51.100.9, for=10.0.0.9")
	fuzzForwarding(f, Forwarded, "Forwarded", true)
}

func FuzzXRealIP(f *testing.F) {
	for _, s := range []string{"198.51.100.9", "2001:db8::1", "[2001:db8::1]:80", "1.1.1.1, 2.2.2.2", "", "garbage", "::ffff:1.2.3.4"} {
		f.Add(s, "")
	}
	f.Add("1.1.1.1", "198.51.100.9")
	fuzzForwarding(f, XRealIP, "X-Real-IP", false)
}

// fuzzForwarding checks a TrustedProxy on one or two header lines: from a
// trusted peer, either no key or the key of exactly one entry of the
// header (never a mix, never the proxy's own bucket unless it is named);
// from an untrusted peer, always the peer's key, whatever the header says.
func fuzzForwarding(f *testing.F, src Source, name string, forwarded bool) {
	key, err := TrustedProxy(src, []string{"10.0.0.0/8", "2001:db8:ffff::/48"})
	if err != nil {
		f.Fatal(err)
	}
	c, _ := newConfig("test", addrKind, nil)
	f.Fuzz(func(t *testing.T, line1, line2 string) {
		lines := []string{line1}
		if line2 != "" {
			lines = append(lines, line2)
		}
		h := http.Header{name: lines}
		k, err := key(&http.Request{RemoteAddr: "10.0.0.2:40000", Header: h})
		checkFuzzResult(t, k, err)
		if err == nil {
			checkAddrKey(t, k)
			if !candidateKeys(&c, lines, forwarded)[k] && !forwardedCandidate(&c, lines, k) {
				t.Fatalf("header %q: key %q is no entry's key", lines, k)
			}
		}
		k, err = key(&http.Request{RemoteAddr: "203.0.113.7:5555", Header: h})
		if err != nil || k != "203.0.113.7" {
			t.Fatalf("untrusted peer with header %q: got %q, %v; want 203.0.113.7", lines, k, err)
		}
	})
}

// forwardedCandidate reports whether k is the key of some for= value of
// the Forwarded lines, unquoted; the naive comma split of candidateKeys
// misses values with escapes.
func forwardedCandidate(c *config, lines []string, k string) bool {
	for _, line := range lines {
		fors, err := parseForwarded(nil, line)
		if err != nil {
			continue
		}
		for _, f := range fors {
			if a, ok := parseHop(f.v, true); ok && c.addrKey(a) == k {
				return true
			}
		}
	}
	return false
}

func FuzzHeader(f *testing.F) {
	for _, s := range []string{"k-123", "", "   ", "a:b", strings.Repeat("k", 300), "\x00", "sha256:abc"} {
		f.Add(s)
	}
	key, err := Header("X-API-Key")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, v string) {
		k, err := key(&http.Request{Header: http.Header{"X-Api-Key": {v}}})
		checkFuzzResult(t, k, err)
		tv := strings.TrimSpace(v)
		if (tv == "") != (err != nil) {
			t.Fatalf("value %q: got %q, %v", v, k, err)
		}
		if err == nil && k != bound("hdr:X-Api-Key:"+tv, defaultMaxKeyLen, false) {
			t.Fatalf("value %q: key %q", v, k)
		}
		if len(k) > defaultMaxKeyLen {
			t.Fatalf("key of %d bytes over the bound", len(k))
		}
	})
}

func FuzzJoin(f *testing.F) {
	f.Add("a:b", "c", "a", "b:c")
	f.Add("1:a,", "b", "1:a", ",b")
	f.Add("x", "y", "x", "y")
	f.Fuzz(func(t *testing.T, a, b, c, d string) {
		if a == "" || b == "" || c == "" || d == "" {
			return
		}
		r := &http.Request{}
		k1, err1 := must(t)(Join(fixed(a), fixed(b)))(r)
		k2, err2 := must(t)(Join(fixed(c), fixed(d)))(r)
		if err1 != nil || err2 != nil {
			t.Fatalf("Join errors: %v, %v", err1, err2)
		}
		if same := a == c && b == d; same != (k1 == k2) {
			t.Fatalf("(%q, %q) -> %q and (%q, %q) -> %q", a, b, k1, c, d, k2)
		}
		if len(k1) > defaultMaxKeyLen {
			t.Fatalf("joined key of %d bytes over the bound", len(k1))
		}
	})
}

// FuzzPlainIPv4 checks RemoteHost's fast path against its general one:
// whenever plainIPv4 accepts a RemoteAddr, parsing and normalizing it must
// give the very same key.
func FuzzPlainIPv4(f *testing.F) {
	for _, s := range []string{
		"203.0.113.7:52139", "0.0.0.0:0", "255.255.255.255:65535", "01.2.3.4:80", "1.2.3.4:65536",
		"1.2.3:80", "1.2.3.4.5:80", "256.1.1.1:80", "1..2.3:80", "[::ffff:1.2.3.4]:80", "1.2.3.4:",
		"203.0.113.7", "1.2.3", "01.2.3.4", "[1.2.3.4]",
	} {
		f.Add(s)
	}
	c, err := newConfig("test", addrKind, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, remoteAddr string) {
		host, ok := plainIPv4(remoteAddr)
		if !ok {
			return
		}
		a, err := peerAddr(remoteAddr)
		if err != nil {
			t.Fatalf("fast path took %q, general path refused it: %v", remoteAddr, err)
		}
		if want := c.addrKey(a); host != want {
			t.Fatalf("fast path keyed %q as %q, general path as %q", remoteAddr, host, want)
		}
	})
}
