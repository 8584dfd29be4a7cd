package linearize

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/redis/go-redis/v9"
)

// failoverAt is when, into a history, the failover starts; failoverWithin
// bounds how long it may take.
const (
	failoverAt     = 1500 * time.Millisecond
	failoverWithin = 20 * time.Second
)

// ackTimeout is WithReplicaAcks' timeout in the failovers, and
// failoverTimeout the store's.
const (
	ackTimeout      = 50 * time.Millisecond
	failoverTimeout = 300 * time.Millisecond
)

// failoverSpec is the policy of the failovers: windows long enough (20 s
// and 60 s on the replicas' clocks, 5 s and 15 s of real time) that the
// counts charged before a failover are still read after it, on the same
// keys (one phase); limits that the keys' windows reach (each key sees
// a 36th of the operations).
var failoverSpec = Spec{Windows: []int64{20_000, 60_000}, Limits: []int64{40, 70}, Slots: 3}

// failoverKeys is how many keys a failover's history uses, and
// failoverResets how many of its operations in 1,000 are Resets.
const (
	failoverKeys   = 36
	failoverResets = 10
)

// A failoverCase is one failover of one setup, run with each of acks as
// WithReplicaAcks' n (0: without it).
type failoverCase struct {
	name string
	// replicas is how many replicas each master has: with n of them all,
	// no decision the store returned may be lost.
	replicas int
	acks     []int
	// start sets the servers up and returns a client factory and the
	// failover: it starts it, and reports when it is over.
	start func(t testing.TB) (client func() redis.UniversalClient, failover func(r *run) string)
}

func failoverCases() []failoverCase {
	return []failoverCase{
		{"sentinel-switchover", 2, []int{0, 1, 2}, func(t testing.TB) (func() redis.UniversalClient, func(*run) string) {
			g, _ := startSentinels(t)
			return sentinelClient(g), func(r *run) string {
				old := g.MasterAddr(t)
				sc := g.Sentinel(t)
				if err := sc.Failover(context.Background(), redistest.SentinelMaster).Err(); err != nil {
					r.t.Errorf("SENTINEL FAILOVER: %v", err)
				}
				over := await(func() bool {
					return g.MasterAddr(t) != old && roleOf(old) == "slave" && replicasOf(g.MasterAddr(t)) >= 1
				})
				return fmt.Sprintf("from %s to %s, the old master a replica again: %v", old, g.MasterAddr(t), over)
			}
		}},
		{"sentinel-kill", 2, []int{0, 1, 2}, func(t testing.TB) (func() redis.UniversalClient, func(*run) string) {
			g, _ := startSentinels(t)
			return sentinelClient(g), func(r *run) string {
				old := g.MasterAddr(t)
				g.Master.Kill()
				over := await(func() bool {
					now := g.MasterAddr(t)
					return now != old && replicasOf(now) >= 1
				})
				return fmt.Sprintf("kill -9 %s, %s promoted with a replica: %v", old, g.MasterAddr(t), over)
			}
		}},
		{"cluster-kill", 1, []int{0, 1}, func(t testing.TB) (func() redis.UniversalClient, func(*run) string) {
			c := redistest.StartClusterWithReplicas(t, 1000, "--cluster-require-full-coverage", "no")
			client := func() redis.UniversalClient {
				return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), ContextTimeoutEnabled: true,
					DialTimeout: 200 * time.Millisecond, PoolSize: 16})
			}
			return client, func(r *run) string {
				victim := c.Nodes[0]
				heir := ""
				for _, n := range c.Nodes[3:] {
					if masterPortOf(n.Addr()) == victim.Port() {
						heir = n.Addr()
					}
				}
				victim.Kill()
				promoted := await(func() bool { return roleOf(heir) == "master" })
				// Back as the heir's replica (empty: no persistence), so
				// that WAIT has a replica to count on that master again.
				victim.Restart()
				over := await(func() bool { return replicasOf(heir) >= 1 })
				return fmt.Sprintf("kill -9 %s, %s promoted: %v, the old master its replica: %v", victim.Addr(), heir, promoted, over)
			}
		}},
	}
}

// TestFailover records histories through a Sentinel failover (SENTINEL
// FAILOVER, and kill -9 of the master: one master, two replicas, three
// sentinels) and a Cluster master failover (kill -9 of a master, its
// replica promoted, the old master back as its replica), without
// redisstore.WithReplicaAcks and with it, waiting for one replica and for
// every replica, and checks each. Waiting for every replica, no decision
// the store returned may be lost: the history must be linearizable.
// Otherwise the verdict is logged as a figure, and an illegal history
// saved: without the option Redis's asynchronous replication may lose
// charges or let the old master take some after the promotion; waiting
// for one replica of two, a switchover loses what the replica left
// behind acknowledged (docs/redis.md). The short run records the
// Cluster's failover with the option; make jepsen records them all.
func TestFailover(t *testing.T) {
	seeds, length := size()
	length = max(length, 6*time.Second)
	for _, fc := range failoverCases() {
		for _, n := range fc.acks {
			name := fc.name + "/acks=" + strconv.Itoa(n)
			if !*long && (n != fc.replicas || fc.name != "cluster-kill") {
				continue
			}
			for i := range seeds {
				seed := firstSeed() + uint64(i)
				// A subtest per seed: its servers stop when it ends.
				t.Run(name+"/seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
					r := newRun(t, strings.ReplaceAll(name, "/", "-"), seed, failoverSpec, length)
					// Resets, few: each that fails may have wiped the
					// counts at any point of a second, which the checker
					// must try. Many keys, each on any operation, so that
					// the operations a failover fails (each of which may
					// or may not have happened) spread thin over them:
					// on 6 keys, each favoured by a replica in turn, a CI
					// run's 59 around a kill were more orders than the
					// checker could try in its minute.
					r.phase, r.keys, r.stray, r.resets = length, failoverKeys, 1, failoverResets
					client, failover := fc.start(t)
					// A timeout above Redis's tick, which times WAIT out
					// (WithReplicaAcks), for every case alike.
					opts := []redisstore.Option{redisstore.WithOverLimitCache(0), redisstore.WithTimeout(failoverTimeout)}
					if n > 0 {
						opts = append(opts, redisstore.WithReplicaAcks(n, ackTimeout))
					}
					r.redisReplicas(client, opts...)
					r.event = func(done <-chan struct{}) {
						t := time.NewTimer(failoverAt)
						defer t.Stop()
						select {
						case <-done:
							return
						case <-t.C:
						}
						start := r.rec.now()
						detail := failover(r)
						r.rec.fault(Fault{Kind: fc.name, Start: start, End: r.rec.now(), Detail: detail})
					}
					h := r.record()
					v := verdict(t, h)
					switch {
					case v.Result == porcupine.Unknown:
						// Saved under testdata/unchecked (verdict): a
						// history no verdict was reached on checks
						// nothing, with or without the option.
						t.Errorf("%s seed %d: no verdict within the check's time", name, seed)
					case n == fc.replicas && v.Result == porcupine.Illegal:
						t.Errorf("%s seed %d waiting for every replica: %s, keys %v: a decision the store returned was lost",
							name, seed, v.Result, v.Illegal)
					}
				})
			}
		}
	}
}

// startSentinels starts a master with two replicas and three sentinels
// that know both: one replica may be promoted while the other stays one.
func startSentinels(t testing.TB) (*redistest.Sentinels, *redistest.Server) {
	t.Helper()
	g := redistest.StartSentinels(t, nil, nil)
	second := redistest.StartServer(t, "--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port()))
	if !await(func() bool {
		for _, a := range g.Addrs {
			sc := redis.NewSentinelClient(&redis.Options{Addr: a})
			m, err := sc.Master(context.Background(), redistest.SentinelMaster).Result()
			sc.Close()
			if err != nil || m["num-slaves"] != "2" {
				return false
			}
		}
		return replicasOf(g.Master.Addr()) == 2
	}) {
		t.Fatalf("the sentinels do not know the second replica %s", second.Addr())
	}
	redistest.AwaitStreaming(t, g.Master.Addr(), 2)
	return g, second
}

// sentinelClient returns a client factory for g's master, as the store
// needs it.
func sentinelClient(g *redistest.Sentinels) func() redis.UniversalClient {
	return func() redis.UniversalClient {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: g.Addrs,
			ContextTimeoutEnabled: true, DialTimeout: 200 * time.Millisecond, PoolSize: 16})
	}
}

// await polls ok until it holds, for failoverWithin at most, and reports
// whether it did.
func await(ok func() bool) bool {
	for deadline := time.Now().Add(failoverWithin); ; {
		if ok() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond) // the servers' failover, not a window
	}
}

// replication returns the field of the INFO replication of the server
// at addr ("" when it does not answer).
func replication(addr, field string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	info, err := c.Info(ctx, "replication").Result()
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

func roleOf(addr string) string { return replication(addr, "role") }

func replicasOf(addr string) int {
	n, _ := strconv.Atoi(replication(addr, "connected_slaves"))
	return n
}

func masterPortOf(addr string) int {
	n, _ := strconv.Atoi(replication(addr, "master_port"))
	return n
}
