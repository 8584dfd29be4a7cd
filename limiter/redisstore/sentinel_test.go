package redisstore

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// failoverLoad is the load of TestSentinelFailover: about rate decisions
// a second on one key, from callers goroutines through one store, under
// a limit per one-second window.
const (
	failoverRate    = 8000
	failoverCallers = 16
	failoverLimit   = 4800
)

// failoverRun is what one run under load saw.
type failoverRun struct {
	perWindow map[int64]int64 // admitted, by the end (Unix ms) of the deciding window
	errors    int64
	firstErr  time.Time // of the first and last failed decision
	lastErr   time.Time
	errText   string
}

// most returns the most admitted in any one window, and that window.
func (r *failoverRun) most() (int64, time.Time) {
	var n, at int64
	for w, c := range r.perWindow {
		if c > n {
			n, at = c, w
		}
	}
	return n, time.UnixMilli(at)
}

// runFailover drives l with failoverRate decisions a second on one key
// for d, calling event (a failover) after lead, and counts what each
// window admitted by the store's real clock.
func runFailover(t *testing.T, l *limiter.Limiter, d, lead time.Duration, event func()) *failoverRun {
	t.Helper()
	r := &failoverRun{perWindow: map[int64]int64{}}
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		errs atomic.Int64
	)
	start := time.Now()
	interval := time.Duration(failoverCallers) * time.Second / failoverRate
	for i := range failoverCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := start.Add(time.Duration(i) * time.Second / failoverRate)
			for next.Before(start.Add(d)) {
				time.Sleep(time.Until(next))
				next = next.Add(interval)
				dec, err := l.Allow(context.Background(), "hot", 1)
				if err != nil {
					errs.Add(1)
					now := time.Now()
					mu.Lock()
					if r.firstErr.IsZero() {
						r.firstErr, r.errText = now, err.Error()
					}
					r.lastErr = now
					mu.Unlock()
					continue
				}
				if dec.Allowed {
					mu.Lock()
					r.perWindow[dec.ResetAt.UnixMilli()]++
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(time.Until(start.Add(lead)))
	event()
	wg.Wait()
	r.errors = errs.Load()
	return r
}

// TestSentinelFailover measures what a Sentinel failover costs the limit:
// a master, one replica and three sentinels on loopback, a go-redis
// failover client, about 8,000 decisions a second on one key under 4,800
// per one-second window, and then a failover.
//
//   - switchover (SENTINEL FAILOVER): the old master keeps taking charges
//     until the client learns of the switch, while new connections
//     already go to the new master, so one window may admit up to twice
//     the limit (each master admits at most the limit);
//   - switchover_min_replicas: the same with the master run with
//     min-replicas-to-write 1: once its replica left it to be promoted,
//     the old master refuses the script's writes (NOREPLICAS), those
//     decisions fail instead, and no window admits over the limit;
//   - kill_master (kill -9): decisions fail until a sentinel promotes the
//     replica, more than one window later (down-after 1 s), so no window
//     is shared and none admits over the limit.
func TestSentinelFailover(t *testing.T) {
	cases := []struct {
		name   string
		master []string // redis-server arguments of the master and replica
		kill   bool
		most   int64 // the bound asserted on the most admitted in one window
	}{
		{"switchover", nil, false, 2 * failoverLimit},
		{"switchover_min_replicas", []string{"--min-replicas-to-write", "1", "--min-replicas-max-lag", "10"}, false, failoverLimit},
		{"kill_master", nil, true, failoverLimit},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := redistest.StartSentinels(t, tc.master, tc.master)
			client := redis.NewFailoverClient(&redis.FailoverOptions{
				MasterName:            redistest.SentinelMaster,
				SentinelAddrs:         g.Addrs,
				ContextTimeoutEnabled: true,
				DialTimeout:           200 * time.Millisecond,
				PoolSize:              64,
			})
			t.Cleanup(func() { client.Close() })
			s, err := New(client, WithPrefix(testPrefix(t)), WithTimeout(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			l, err := limiter.New(limiter.MustPolicy("failover", limiter.PerSecond(failoverLimit)), limiter.WithStore(s))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })

			old := g.MasterAddr(t)
			var switched time.Time
			r := runFailover(t, l, 6*time.Second, 2*time.Second, func() {
				if tc.kill {
					g.Master.Kill()
				} else if err := g.Sentinel(t).Failover(context.Background(), redistest.SentinelMaster).Err(); err != nil {
					t.Errorf("SENTINEL FAILOVER: %v", err)
				}
				switched = time.Now()
			})
			if now := g.MasterAddr(t); now == old {
				t.Fatalf("no failover: the master is still %s", now)
			}
			most, at := r.most()
			var admitted int64
			for _, c := range r.perWindow {
				admitted += c
			}
			var errSpan, errFrom time.Duration
			if r.errors > 0 {
				errSpan, errFrom = r.lastErr.Sub(r.firstErr), r.firstErr.Sub(switched)
			}
			t.Logf("%s: most admitted in one window %d (%.2fx the limit of %d), in the window ending %v after the failover; "+
				"%d windows, %d admitted, %d failed decisions over %v, from %v after the failover (first: %s)",
				tc.name, most, float64(most)/failoverLimit, failoverLimit, at.Sub(switched).Round(time.Millisecond),
				len(r.perWindow), admitted, r.errors, errSpan.Round(time.Millisecond),
				errFrom.Round(time.Millisecond), r.errText)
			if most > tc.most {
				t.Fatalf("most admitted in one window: got %d, want at most %d", most, tc.most)
			}
			// The load reached the limit: the figure is the failover's, not
			// a shortfall of load.
			if most < failoverLimit {
				t.Fatalf("most admitted in one window: got %d, want the load to reach the limit %d", most, failoverLimit)
			}
		})
	}
}
