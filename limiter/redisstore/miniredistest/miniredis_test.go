package miniredistest

import (
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/fixedwindow/ratelimit/internal/storetest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// newStore starts a miniredis of its own and returns a store on it,
// closed when the test ends, with the server for the test to move its
// clock.
func newStore(t *testing.T, opts ...redisstore.Option) (*redisstore.Store, *miniredis.Miniredis) {
	t.Helper()
	return newStoreOn(t, func(addr string) redis.UniversalClient {
		return redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	}, opts...)
}

// newStoreOn is newStore on the client dial makes for miniredis's
// address.
func newStoreOn(t *testing.T, dial func(addr string) redis.UniversalClient, opts ...redisstore.Option) (*redisstore.Store, *miniredis.Miniredis) {
	t.Helper()
	m := miniredis.RunT(t)
	c := dial(m.Addr())
	t.Cleanup(func() { c.Close() })
	s, err := redisstore.New(c, append([]redisstore.Option{redisstore.WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("redisstore.New on miniredis: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// store is a storetest.NewStore on a fresh miniredis.
func store(opts ...redisstore.Option) storetest.NewStore {
	return func(t *testing.T, _ limiter.Clock) limiter.Store {
		s, _ := newStore(t, opts...)
		return s
	}
}

// The suite the Redis store passes on Redis (TestMatchesMemoryStore),
// with and without the over-limit cache, and through a ClusterClient
// (miniredis answers CLUSTER SLOTS as one node serving every slot): the
// memory store's answers, exactly.
func TestMatchesMemoryStore(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []redisstore.Option
	}{
		{"default", nil},
		{"no_overlimit_cache", []redisstore.Option{redisstore.WithOverLimitCache(0)}},
	} {
		t.Run(tc.name, func(t *testing.T) { storetest.RunMatchesMemory(t, store(tc.opts...)) })
	}
	t.Run("cluster_client", func(t *testing.T) {
		storetest.RunMatchesMemory(t, func(t *testing.T, _ limiter.Clock) limiter.Store {
			s, _ := newStoreOn(t, func(addr string) redis.UniversalClient {
				return redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addr}, ContextTimeoutEnabled: true})
			})
			return s
		})
	})
}

// The clock-step rows of the application's clock, as on Redis
// (TestAppClockSteps).
func TestAppClockSteps(t *testing.T) {
	storetest.RunClockSteps(t, store(redisstore.WithExpiryMargin(time.Minute)), storetest.KeyedClockSteps)
}

// The calendar rows (days of 23 and 25 hours, leap February, zones off
// the hour), as on Redis (TestCalendarAppClock), with and without leases.
func TestCalendar(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		storetest.RunCalendar(t, store(), storetest.CalendarRows(t, ""))
	})
	t.Run("leases", func(t *testing.T) {
		storetest.RunCalendar(t, store(redisstore.WithLeases(time.Second, 1)), storetest.CalendarRows(t, ""))
	})
}
