package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

var hashSecret = []byte("0123456789abcdef0123456789abcdef")

// A secret under 16 bytes is refused by New, naming the option.
func TestWithKeyHashRefusesShortSecret(t *testing.T) {
	c := sharedClient(t)
	for _, tc := range []struct {
		name   string
		secret []byte
		ok     bool
	}{
		{"nil", nil, false},
		{"empty", []byte{}, false},
		{"15_bytes", hashSecret[:15], false},
		{"16_bytes", hashSecret[:16], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(c, WithKeyHash(tc.secret))
			if s != nil {
				defer s.Close()
			}
			switch {
			case tc.ok && err != nil:
				t.Fatalf("WithKeyHash(%d bytes): %v", len(tc.secret), err)
			case !tc.ok && (!errors.Is(err, ErrInvalidOption) || !strings.Contains(err.Error(), "WithKeyHash")):
				t.Fatalf("WithKeyHash(%d bytes): got %v, want an error wrapping ErrInvalidOption naming WithKeyHash", len(tc.secret), err)
			}
		})
	}
}

// Under WithKeyHash, on either clock and with leases, every call (a
// decision, a lease, a refund, a settle, a reset, a slot held and read)
// takes the clear key and writes none: every Redis key's hash tag is the
// hashed key, of one length whatever the clear key's, and no key or
// value holds the clear key. Usage read by the clear key counts what
// the calls did.
func TestWithKeyHashEveryCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
	}{
		{"app_clock", nil},
		{"server_clock", []Option{WithServerClock()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := sharedClient(t)
			prefix := testPrefix(t)
			s := newStore(t, c, append([]Option{WithPrefix(prefix), WithKeyHash(hashSecret), WithLeases(time.Second, 1)}, tc.opts...)...)
			clk := limitertest.New(t0.Add(10 * time.Second))
			l := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1000), limiter.PerHour(5000)), s, clk)
			f, err := limiter.NewInFlight("exports", 3, limiter.WithStore(s), limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			ctx := context.Background()
			long := "hdr:X-Api-Key:" + strings.Repeat("secret-", 700)
			clear := []string{"203.0.113.9", "hdr:X-Api-Key:key-asha", long}
			for _, k := range clear {
				var d limiter.Decision
				for range 20 {
					if d, err = l.Allow(ctx, k, 1); err != nil || !d.Allowed {
						t.Fatalf("Allow(%.20q): %+v, %v", k, d, err)
					}
				}
				if err := l.Refund(ctx, k, 1, d); err != nil {
					t.Fatal(err)
				}
				if err := l.Settle(ctx, k, 1, 4, d); err != nil {
					t.Fatal(err)
				}
				if _, release, err := f.Acquire(ctx, k); err != nil || release == nil {
					t.Fatalf("Acquire(%.20q): %v", k, err)
				}
				if u, err := f.Usage(ctx, k); err != nil || u.Held != 1 {
					t.Fatalf("InFlight.Usage(%.20q) = %+v, %v; want 1 held", k, u, err)
				}
			}
			if s.Stats().Leased == 0 {
				t.Fatal("no decision came from a lease: the test did not lease")
			}
			// 20 charged, 1 refunded, 3 settled: 22, leased units included.
			if u, err := l.Usage(ctx, clear[1]); err != nil || u.Windows[0].Used < 22 {
				t.Fatalf("Usage(clear key) = %+v, %v; want at least 22 used", u, err)
			}
			if err := l.Reset(ctx, clear[1]); err != nil {
				t.Fatal(err)
			}
			if u, err := l.Usage(ctx, clear[1]); err != nil || u.Windows[0].Used != 0 {
				t.Fatalf("Usage after Reset(clear key) = %+v, %v; want 0 used", u, err)
			}
			tags := map[string]bool{}
			iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				k := strings.TrimPrefix(iter.Val(), prefix)
				tag, _, ok := strings.Cut(k, "}")
				if !ok || !strings.HasPrefix(tag, "{hmac:") || len(tag) != len("{hmac:")+22 {
					t.Errorf("key %q: hash tag %q is not a hashed key", k, tag)
				}
				tags[tag] = true
				var vals []string
				switch c.Type(ctx, iter.Val()).Val() {
				case "string":
					vals = []string{c.Get(ctx, iter.Val()).Val()}
				case "zset":
					vals = c.ZRange(ctx, iter.Val(), 0, -1).Val()
				}
				for _, raw := range []string{"203.0.113.9", "key-asha", "secret-", "hdr:"} {
					if strings.Contains(k, raw) || strings.Contains(strings.Join(vals, " "), raw) {
						t.Errorf("key %q (values %q) holds %q", k, vals, raw)
					}
				}
			}
			if err := iter.Err(); err != nil {
				t.Fatal(err)
			}
			if len(tags) != len(clear) {
				t.Errorf("got %d hash tags, want one per client key (%d): %v", len(tags), len(clear), tags)
			}
		})
	}
}
