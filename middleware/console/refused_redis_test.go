package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/keyhash"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/middleware/console"
)

// TestRefusalsAcrossReplicas: two replicas share their refusals through
// the Redis at 127.0.0.1:6379, keys hashed (each counts on a store of
// its own: what is shared is the refusals alone): the console of one shows,
// within 2 s and to a person who may only look, the refusals the other
// made (the key looked up in clear), and lists the key limited now in
// its hashed form; Redis holds no key in clear.
func TestRefusalsAcrossReplicas(t *testing.T) {
	c := redistest.Shared(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:refusals:" + hex.EncodeToString(b[:]) + ":"
	secret := []byte("0123456789abcdef0123456789abcdef")
	cfg := console.RefusalsConfig{Redis: c, Prefix: prefix, KeyHash: secret}
	recA, recB := newRefusals(t, cfg), newRefusals(t, cfg)
	a := newFixture(t, redisStore(t, c, 5*time.Second), func(c *console.Config) { c.Refusals = recA })
	bx := newFixture(t, redisStore(t, c, 5*time.Second), func(c *console.Config) { c.Refusals = recB })
	a.clk.Set(at0312)
	bx.clk.Set(at0312.Add(time.Minute))
	if got := a.call(a.door(t, recA), "203.0.113.42", 8, time.Second); got != 3 {
		t.Fatalf("replica A refused %d of 8, want 3", got)
	}
	refused := time.Now()
	deadline := refused.Add(2 * time.Second)
	var u refusedJSON
	for {
		u = refusedJSON{}
		decode(t, bx.get("/admin/limits/usage?key=203.0.113.42", "X-Test-Role", "viewer"), &u)
		if u.Refused != nil && u.Refused.Count == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // a bounded poll: another replica's write, paced by the wall clock
	}
	if u.Refused == nil || u.Refused.Count != 3 || len(u.Refused.Runs) != 1 || u.Refused.Runs[0].First != "2026-07-31T03:12:15Z" || u.Refused.Error != "" {
		t.Fatalf("replica B's console after %v: %+v, want A's 3 refusals from 03:12:15", time.Since(refused), u.Refused)
	}
	t.Logf("shown by the other replica %v after the refusals", time.Since(refused).Round(time.Millisecond))

	var l limitedJSON
	decode(t, bx.get("/admin/limits/limited", "X-Test-Role", "viewer"), &l)
	h, _ := keyhash.New("test", secret)
	if len(l.Keys) != 1 || l.Keys[0].Key != h.Key("203.0.113.42") || !l.Keys[0].Hashed || l.Keys[0].Count != 3 {
		t.Fatalf("replica B's limited now %+v, want the key's hash, 3 refusals", l)
	}
	l = limitedJSON{}
	decode(t, a.get("/admin/limits/limited"), &l)
	if len(l.Keys) != 1 || l.Keys[0].Key != "203.0.113.42" || l.Keys[0].Hashed {
		t.Fatalf("replica A's limited now %+v, want the key in clear (its own)", l)
	}
	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, "{"+prefix+"refusals}*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	err := iter.Err()
	if err != nil || len(keys) != 2 { // B refused nobody: it wrote nothing
		t.Fatalf("keys under the prefix %v, %v: want the set and A's summary", keys, err)
	}
	for _, k := range keys {
		dump, _ := c.Dump(ctx, k).Result()
		if strings.Contains(dump, "203.0.113.42") {
			t.Fatalf("%s holds the key in clear", k)
		}
	}
}
