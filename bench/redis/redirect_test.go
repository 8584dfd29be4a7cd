package redis

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	goredis "github.com/redis/go-redis/v9"
)

// TestClusterRedirects checks the client the Cluster benchmark gives the
// store: with go-redis's default options, the store's Cluster path
// follows MOVED (a slot moved) and ASK (a slot mid-migration), and charges
// each decision once.
// With MaxRedirects -1, MOVED is not followed: the store leaves redirects
// to the client.
func TestClusterRedirects(t *testing.T) {
	ctx := context.Background()
	cl := redistest.StartCluster(t)
	admin := cl.Client(t)
	newLimiter := func(t *testing.T, maxRedirects int) *limiter.Limiter {
		c := goredis.NewClusterClient(&goredis.ClusterOptions{
			Addrs:                 cl.Addrs(),
			ContextTimeoutEnabled: true,
			MaxRedirects:          maxRedirects,
		})
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.WithTimeout(5*time.Second),
			redisstore.WithPrefix("redir-"+strconv.FormatInt(time.Now().UnixNano(), 36)+":"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		l, err := limiter.New(limiter.MustPolicy("redir", limiter.PerHour(10)), limiter.WithStore(s))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// elsewhere returns a node that does not serve slot.
	elsewhere := func(t *testing.T, slot int) int {
		owner := cl.SlotOwner(t, slot)
		for i, n := range cl.Nodes {
			if n.Addr() != owner {
				return i
			}
		}
		t.Fatal("one node serves every slot")
		return 0
	}
	want := func(t *testing.T, l *limiter.Limiter, key, when string, remaining int64) {
		t.Helper()
		d, err := l.Allow(ctx, key, 1)
		if err != nil || !d.Allowed || d.Remaining != remaining {
			t.Fatalf("%s: got %+v, %v; want allowed, remaining %d", when, d, err, remaining)
		}
	}

	t.Run("moved_and_ask", func(t *testing.T) {
		key := "redir-default"
		slot, err := admin.ClusterKeySlot(ctx, "{"+key+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		l := newLimiter(t, 0)
		want(t, l, key, "first", 9)
		want(t, l, key, "second", 8)

		from := cl.SlotOwner(t, int(slot))
		moved := redistest.ErrorCount(t, from, "MOVED")
		cl.MoveSlot(t, int(slot), elsewhere(t, int(slot)))
		want(t, l, key, "after MOVED", 7)
		if n := redistest.ErrorCount(t, from, "MOVED"); n <= moved {
			t.Fatalf("%s: MOVED replies %d before, %d after; want more", from, moved, n)
		}

		from = cl.SlotOwner(t, int(slot))
		ask := redistest.ErrorCount(t, from, "ASK")
		finish := cl.BeginMove(t, int(slot), elsewhere(t, int(slot)))
		want(t, l, key, "during migration (ASK)", 6)
		if n := redistest.ErrorCount(t, from, "ASK"); n <= ask {
			t.Fatalf("%s: ASK replies %d before, %d after; want more", from, ask, n)
		}
		finish()
		want(t, l, key, "after migration", 5)
	})

	t.Run("max_redirects_-1_fails_on_MOVED", func(t *testing.T) {
		key := "redir-none"
		slot, err := admin.ClusterKeySlot(ctx, "{"+key+"}").Result()
		if err != nil {
			t.Fatal(err)
		}
		l := newLimiter(t, -1)
		want(t, l, key, "first", 9)
		cl.MoveSlot(t, int(slot), elsewhere(t, int(slot)))
		if _, err := l.Allow(ctx, key, 1); err == nil || !strings.Contains(err.Error(), "MOVED") {
			t.Fatalf("after MOVED with MaxRedirects -1: got %v, want a MOVED error", err)
		}
	})
}
