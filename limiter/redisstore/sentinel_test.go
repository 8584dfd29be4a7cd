package redisstore

import (
	"context"
	"net"
	"strings"
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

// storeClient names the connections of the store's client in
// TestSentinelFailover, so that the test sees which server they are on.
const storeClient = "failover-store"

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

// runFailover drives l with failoverRate decisions a second on one key,
// and counts what each window admitted by the store's real clock. Once a
// window has admitted the limit (the load is at full strength), it calls
// event (a failover) as the load enters the next window, so that the
// failover starts at the same point of a window every run, early enough
// that the promotion a second later finds the window young. Once over
// holds (no decision can reach the old master any more), it stops the
// load as it enters the window after over's: over's window, the last the
// old master could charge, is complete once the calls under way are.
func runFailover(t *testing.T, l *limiter.Limiter, event func(), over func() bool) *failoverRun {
	t.Helper()
	r := &failoverRun{perWindow: map[int64]int64{}}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		errs     atomic.Int64
		stop     atomic.Bool
		full     = make(chan struct{}) // closed when a window admitted the limit
		fullOnce sync.Once
		edge     int64         // Unix ms: a call beginning at or after it closes crossed
		crossed  chan struct{} // nil when no edge is set
	)
	// nextWindow waits, for at most within, until a call of the load
	// begins in a later window than now's, on the limiter's clock.
	nextWindow := func(within time.Duration) bool {
		ch := make(chan struct{})
		w := time.Second.Milliseconds() // the policy's window
		mu.Lock()
		edge, crossed = (time.Now().UnixMilli()/w+1)*w, ch
		mu.Unlock()
		return closedWithin(ch, within)
	}
	start := time.Now()
	interval := time.Duration(failoverCallers) * time.Second / failoverRate
	for i := range failoverCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The load's rate, not a wait: each caller keeps its own
			// schedule, so that the callers together send about
			// failoverRate decisions a second.
			for next := start.Add(time.Duration(i) * time.Second / failoverRate); !stop.Load(); next = next.Add(interval) {
				time.Sleep(time.Until(next))
				mu.Lock()
				if crossed != nil && time.Now().UnixMilli() >= edge {
					close(crossed)
					crossed = nil
				}
				mu.Unlock()
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
					end := dec.ResetAt.UnixMilli()
					mu.Lock()
					if r.perWindow[end]++; r.perWindow[end] >= failoverLimit {
						fullOnce.Do(func() { close(full) })
					}
					mu.Unlock()
				}
			}
		}()
	}
	halt := func() {
		stop.Store(true)
		wg.Wait()
		r.errors = errs.Load()
	}
	if !closedWithin(full, 10*time.Second) || !nextWindow(10*time.Second) {
		halt()
		most, _ := r.most()
		t.Fatalf("most admitted in one window: got %d in 10 s, want the load to reach the limit %d", most, failoverLimit)
	}
	event()
	if !await(20*time.Second, over) {
		halt()
		t.Fatalf("the failover was not over for the store within 20 s")
	}
	if !nextWindow(10 * time.Second) {
		halt()
		t.Fatalf("no call in the window after the failover's within 10 s")
	}
	halt()
	return r
}

// oldMasterServes reports whether c, a client of the old master, still
// has a connection named name (the store's client's) and is a master:
// whether it may still take the store's charges.
func oldMasterServes(c *redis.Client, name string) bool {
	ctx := context.Background()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return true // not known: ask again
	}
	if strings.Contains(info, "role:slave") {
		return false
	}
	list, err := c.ClientList(ctx).Result()
	return err != nil || strings.Contains(list, " name="+name+" ")
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
				ClientName:            storeClient,
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
			oldMaster := redistest.Client(t, g.Master.Addr())
			sentinel := g.Sentinel(t)
			var switched time.Time
			r := runFailover(t, l, func() {
				if tc.kill {
					g.Master.Kill()
				} else if err := sentinel.Failover(context.Background(), redistest.SentinelMaster).Err(); err != nil {
					t.Errorf("SENTINEL FAILOVER: %v", err)
				}
				switched = time.Now()
			}, func() bool {
				// Over once the sentinels name another master and, when
				// the old one still runs, it holds no connection of the
				// store's client (which drops them when it learns of the
				// switch) or has been made a replica.
				a, err := sentinel.GetMasterAddrByName(context.Background(), redistest.SentinelMaster).Result()
				if err != nil || net.JoinHostPort(a[0], a[1]) == old {
					return false
				}
				return tc.kill || !oldMasterServes(oldMaster, storeClient)
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
