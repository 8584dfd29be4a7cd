package keyhash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
)

var secret = []byte("0123456789abcdef")

func TestNewRefusesShortSecrets(t *testing.T) {
	for _, tc := range []struct {
		name   string
		secret []byte
		ok     bool
	}{
		{"nil", nil, false},
		{"empty", []byte{}, false},
		{"15_bytes", secret[:15], false},
		{"16_bytes", secret, true},
		{"64_bytes", []byte(strings.Repeat("s", 64)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New("test", tc.secret)
			if (err == nil) != tc.ok {
				t.Fatalf("New(%d bytes): got err %v, want ok %v", len(tc.secret), err, tc.ok)
			}
		})
	}
}

func TestKeyIsTruncatedHMAC(t *testing.T) {
	h, err := New("test", secret)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"203.0.113.9", "hdr:X-Api-Key:key-asha", strings.Repeat("x", 5000), "{}%"} {
		got := h.Key(key)
		m := hmac.New(sha256.New, secret)
		m.Write([]byte(key))
		want := Kind + base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:size])
		if got != want || len(got) != Len {
			t.Errorf("Key(%.20q): got %q (%d bytes), want %q (%d bytes)", key, got, len(got), want, Len)
		}
		if strings.ContainsAny(got, "{}%") || strings.Contains(got, key) {
			t.Errorf("Key(%.20q) = %q holds a brace, a '%%' or the key", key, got)
		}
		if again := h.Key(key); again != got {
			t.Errorf("Key(%.20q) twice: %q then %q", key, got, again)
		}
	}
}

func TestKeyDependsOnSecret(t *testing.T) {
	a, _ := New("test", secret)
	other := append([]byte(nil), secret...)
	other[0] ^= 1
	b, _ := New("test", other)
	if a.Key("203.0.113.9") == b.Key("203.0.113.9") {
		t.Fatal("two secrets gave one hash")
	}
}

func TestNewCopiesSecret(t *testing.T) {
	s := append([]byte(nil), secret...)
	h, _ := New("test", s)
	before := h.Key("k")
	s[0] ^= 1
	if after := h.Key("k"); after != before {
		t.Fatalf("changing the caller's slice changed the hash: %q then %q", before, after)
	}
}

func BenchmarkKey(b *testing.B) {
	h, _ := New("test", secret)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = h.Key("hdr:X-Api-Key:key-asha")
		}
	})
}
