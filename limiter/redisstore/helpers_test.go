package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// t0 is a window-aligned instant: 2026-07-31 12:00:00 UTC.
var t0 = time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)

// testPrefix returns a key prefix no other test (or agent) uses.
func testPrefix(t testing.TB) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := strings.NewReplacer("{", "(", "}", ")", "/", ".").Replace(t.Name())
	return "test:" + name + ":" + hex.EncodeToString(b[:]) + ":"
}

// newStore builds a store on c with a private prefix and closes it when
// the test ends. Its timeout is generous, for a loaded machine under
// -race; the tests of the timeout set their own.
func newStore(t testing.TB, c redis.UniversalClient, opts ...Option) *Store {
	t.Helper()
	s, err := New(c, append([]Option{WithPrefix(testPrefix(t)), WithTimeout(5 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// newLimiter builds a limiter on s with a fake clock.
func newLimiter(t testing.TB, p *limiter.Policy, s limiter.Store, clk *limitertest.Clock) *limiter.Limiter {
	t.Helper()
	l, err := limiter.New(p, limiter.WithStore(s), limiter.WithClock(clk))
	if err != nil {
		t.Fatalf("limiter.New: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// commandCalls returns how many times the server ran cmd (INFO
// commandstats), e.g. "evalsha".
func commandCalls(t testing.TB, c redis.UniversalClient, cmd string) int64 {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatalf("INFO commandstats: %v", err)
	}
	for _, line := range strings.Split(info, "\n") {
		if rest, ok := strings.CutPrefix(line, "cmdstat_"+cmd+":calls="); ok {
			var n int64
			for _, ch := range rest {
				if ch < '0' || ch > '9' {
					break
				}
				n = n*10 + int64(ch-'0')
			}
			return n
		}
	}
	return 0
}

func sharedClient(t testing.TB) *redis.Client { return redistest.Shared(t) }

// awaitServerWindow makes room for a serverClock test, which runs on
// Redis's own clock (a fake clock cannot move it): when less than 300 ms
// are left in Redis's current window of length w, it waits for the next
// window to begin, so that the test's few calls land in one window rather
// than straddling a boundary by chance.
func awaitServerWindow(t testing.TB, c redis.UniversalClient, w time.Duration) {
	t.Helper()
	now := serverTime(t, c)
	if next := nextServerWindow(now, w); next.Sub(now) < 300*time.Millisecond {
		awaitServerTime(t, c, next.Add(10*time.Millisecond))
	}
}

// nextServerWindow returns the start of the window of length w after the
// one now is in, on Redis's clock.
func nextServerWindow(now time.Time, w time.Duration) time.Time {
	return time.Unix(0, (now.UnixNano()/int64(w)+1)*int64(w))
}

// serverTime returns Redis's TIME on c.
func serverTime(t testing.TB, c redis.UniversalClient) time.Time {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatalf("redis TIME: %v", err)
	}
	return now
}

// awaitServerTime waits until Redis's TIME on c reaches at, and returns
// it. It is the one wait of the package's tests on Redis's own clock,
// which no fake clock moves: it sleeps until at would come on the local
// clock, then asks Redis again, so that it ends when Redis's clock, not
// the local one, has crossed at.
func awaitServerTime(t testing.TB, c redis.UniversalClient, at time.Time) time.Time {
	t.Helper()
	for {
		now := serverTime(t, c)
		if !now.Before(at) {
			return now
		}
		time.Sleep(at.Sub(now))
	}
}

// await looks at cond every few milliseconds until it holds, for at most
// within, and reports whether it held. It is for a state the test can
// only observe, such as a client's heartbeat or a breaker's open time
// running out: it ends as soon as the state is there.
func await(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}

// closedWithin reports whether ch is closed within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-ch:
		return true
	case <-deadline.C:
		return false
	}
}

// farDeadline is a decision's deadline that no test reaches.
var farDeadline = time.Now().Add(time.Hour)

// isClusterRouter reports whether s sends node calls per Cluster master.
func isClusterRouter(s *Store) bool {
	_, ok := s.batch.router.(clusterRouter)
	return ok
}

// isRingRouter reports whether s sends a call per Ring shard.
func isRingRouter(s *Store) bool {
	_, ok := s.batch.router.(ringRouter)
	return ok
}

// String names a path in subtests: "batch", "plain" or "by-client".
func (p path) String() string {
	switch p {
	case pathBatch:
		return "batch"
	case pathPlain:
		return "plain"
	}
	return "by-client"
}

// awaitErrors waits until the server at addr has answered more than n
// errors of the given prefix (INFO errorstats), for at most 5 s: a
// handshake with the code under test instead of a fixed sleep.
func awaitErrors(t testing.TB, addr, prefix string, n int) {
	t.Helper()
	if !await(5*time.Second, func() bool { return redistest.ErrorCount(t, addr, prefix) > n }) {
		t.Errorf("no %s from %s within 5 s", prefix, addr)
	}
}

// worst returns the worst of a store's health by node (Healthy for none):
// Unavailable, then Probing, then Failing.
func worst(byNode map[string]Health) Health {
	rank := map[Health]int{Healthy: 0, Failing: 1, Probing: 2, Unavailable: 3}
	w := Healthy
	for _, h := range byNode {
		if rank[h] > rank[w] {
			w = h
		}
	}
	return w
}

// reasonOf returns the name an error of the store gives its cause.
func reasonOf(err error) string {
	var r interface{ Reason() string }
	if errors.As(err, &r) {
		return r.Reason()
	}
	return ""
}

// String names a clock in subtests: "app" or "server".
func (c clockSource) String() string {
	if c == serverClock {
		return "server"
	}
	return "app"
}

// serverValue is what a key holds under serverClock: "<window id>:<count>".
func serverValue(id int64, count any) string { return fmt.Sprintf("%d:%v", id, count) }

// serverWindow reads a serverClock key: the window id and the count it
// holds, as strings, or the GET error (redis.Nil for none).
func serverWindow(ctx context.Context, c redis.Cmdable, key string) (id, count string, err error) {
	v, err := c.Get(ctx, key).Result()
	if err != nil {
		return "", "", err
	}
	id, count, ok := strings.Cut(v, ":")
	if !ok {
		return "", "", fmt.Errorf("value %q is no <window id>:<count>", v)
	}
	return id, count, nil
}

// storedCount reads the count a key holds under the clock, as a string.
func storedCount(ctx context.Context, c redis.Cmdable, key string, clock clockSource) (string, error) {
	if clock == serverClock {
		_, count, err := serverWindow(ctx, c, key)
		return count, err
	}
	return c.Get(ctx, key).Result()
}
