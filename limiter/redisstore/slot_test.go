package redisstore

import (
	"context"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
)

// TestKeySlot: the store's slot of a key is the Cluster's (CLUSTER
// KEYSLOT), for hash tags, empty and unclosed tags, and the store's own
// keys, whose slot requestSlot finds from the client key alone.
func TestKeySlot(t *testing.T) {
	ctx := context.Background()
	cl := redistest.SharedCluster(t)
	admin := cl.Client(t)
	s := newStore(t, admin)
	p := limiter.MustPolicy("slot", limiter.PerMinute(5), limiter.PerHour(50))
	for _, tc := range []struct{ name, key string }{
		{"empty", ""},
		{"plain", "123456789"}, // the specification's check value, 0x31C3
		{"tag", "{user1000}.following"},
		{"tag_elsewhere", "foo{bar}{zap}"},
		{"empty_tag", "foo{}{bar}"},
		{"unclosed", "foo{bar"},
		{"nested", "foo{{bar}}zap"},
		{"utf8", "ключ{é}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := admin.ClusterKeySlot(ctx, tc.key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := keySlot(tc.key); int64(got) != want {
				t.Fatalf("keySlot(%q) = %d, want %d", tc.key, got, want)
			}
		})
	}
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	for _, key := range []string{"alice", "k", "a{b}c", "%7B", "}{", "ключ", "user-42"} {
		for w := range 2 {
			k := keyOf(s, key, p, w, t0)
			want, err := admin.ClusterKeySlot(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			if got := requestSlot(key); int64(got) != want {
				t.Fatalf("requestSlot(%q) = %d, want %d (CLUSTER KEYSLOT %s)", key, got, want, k)
			}
		}
	}
}

// FuzzKeySlot: a store key's slot is its client key's, whatever the
// client key holds.
func FuzzKeySlot(f *testing.F) {
	for _, k := range []string{"alice", "a{b}c", "}", "{", "%", ""} {
		f.Add(k)
	}
	p := limiter.MustPolicy("slot", limiter.PerMinute(5))
	var kc keyCache
	f.Fuzz(func(t *testing.T, key string) {
		if key == "" {
			return
		}
		k := appendKeys(nil, defaultPrefix, key, kc.get(p), 1, appClock, 0)[0]
		if got, want := requestSlot(key), keySlot(k); got != want {
			t.Fatalf("requestSlot(%q) = %d, keySlot(%q) = %d", key, got, k, want)
		}
	})
}
