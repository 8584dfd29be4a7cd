package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Cluster is three Redis Cluster masters on loopback ports, slots
// split evenly by redis-cli --cluster create, with a replica each when
// started by StartClusterWithReplicas.
type Cluster struct {
	Nodes []*Server // the masters, then the replicas
}

// StartCluster starts a three-master cluster with no replicas and waits
// until every node reports cluster_state:ok. The nodes stop when the test
// ends.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	return startCluster(t, 3, 0, "2000")
}

var shared struct {
	once sync.Once
	c    *Cluster
	err  any
	proc process
}

// SharedCluster returns a three-master cluster started on first use and
// shared by every test of the package that asks, for tests that give their
// keys a prefix of their own and leave every slot served (a slot they
// move stays moved). The package's TestMain stops it with
// StopSharedCluster.
func SharedCluster(t testing.TB) *Cluster {
	t.Helper()
	shared.once.Do(func() {
		defer func() { shared.err = recover() }()
		shared.c = startCluster(&shared.proc, 3, 0, "2000")
	})
	if shared.err != nil {
		t.Fatalf("redistest: shared cluster: %v", shared.err)
	}
	return shared.c
}

// StopSharedCluster stops the cluster SharedCluster started, if any.
func StopSharedCluster() { shared.proc.stop() }

// StartClusterWithReplicas starts three masters with one replica each
// (six nodes, paired as redis-cli assigns them), a node timeout of
// nodeTimeoutMS, and extra arguments for every node, and waits until
// every node reports cluster_state:ok and every replica is in sync, so
// that each can be promoted, and acknowledges its master's writes
// (AwaitStreaming). The first sync starts at once (Redis 7
// waits 5 s by default, during which a replica could not take over).
func StartClusterWithReplicas(t testing.TB, nodeTimeoutMS int, args ...string) *Cluster {
	t.Helper()
	c := startCluster(t, 6, 1, strconv.Itoa(nodeTimeoutMS), append([]string{"--repl-diskless-sync-delay", "0"}, args...)...)
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port()), "info", "replication").Output()
			if err == nil && (strings.Contains(string(info), "role:master") || strings.Contains(string(info), "master_link_status:up")) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: replica %s not in sync: %v\n%s", n.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	for _, n := range c.Nodes {
		info, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port()), "info", "replication").Output()
		if err != nil {
			t.Fatalf("redistest: %s: info replication: %v", n.Addr(), err)
		}
		if strings.Contains(string(info), "role:master") {
			AwaitStreaming(t, n.Addr(), 1)
		}
	}
	return c
}

func startCluster(t owner, nodes, replicas int, nodeTimeout string, args ...string) *Cluster {
	t.Helper()
	c := &Cluster{}
	var addrs []string
	for range nodes {
		dir := t.TempDir()
		n := startServer(t, append([]string{"--cluster-enabled", "yes",
			"--cluster-config-file", dir + "/nodes.conf",
			"--cluster-node-timeout", nodeTimeout}, args...)...)
		c.Nodes = append(c.Nodes, n)
		addrs = append(addrs, n.Addr())
	}
	cmd := append([]string{"--cluster", "create"}, addrs...)
	cmd = append(cmd, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	out, err := exec.Command("redis-cli", cmd...).CombinedOutput()
	if err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, n := range c.Nodes {
		for {
			info, err := exec.Command("redis-cli", "-p", strconv.Itoa(n.Port()), "cluster", "info").Output()
			if err == nil && strings.Contains(string(info), "cluster_state:ok") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redistest: node %s not ok: %v\n%s", n.Addr(), err, info)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c
}

// Addrs returns the nodes' addresses, masters first.
func (c *Cluster) Addrs() []string {
	a := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		a[i] = n.Addr()
	}
	return a
}

// Client returns a cluster client of the nodes, built as the store needs
// it (ContextTimeoutEnabled; go-redis's default retries and redirects),
// closed when the test ends. opts, if any, may change the options first.
func (c *Cluster) Client(t testing.TB, opts ...func(*redis.ClusterOptions)) *redis.ClusterClient {
	t.Helper()
	o := &redis.ClusterOptions{
		Addrs:                 c.Addrs(),
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
	}
	for _, f := range opts {
		f(o)
	}
	cc := redis.NewClusterClient(o)
	t.Cleanup(func() { cc.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.Ping(ctx).Err()
	}); err != nil {
		t.Fatalf("redistest: cluster ping: %v", err)
	}
	return cc
}

// SlotOwner returns the address of the master that serves slot.
func (c *Cluster) SlotOwner(t testing.TB, slot int) string {
	t.Helper()
	cc := redis.NewClient(&redis.Options{Addr: c.Nodes[0].Addr()})
	defer cc.Close()
	shards, err := cc.ClusterShards(context.Background()).Result()
	if err != nil {
		t.Fatalf("redistest: cluster shards: %v", err)
	}
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if int64(slot) < r.Start || int64(slot) > r.End {
				continue
			}
			for _, n := range sh.Nodes {
				if n.Role == "master" {
					return n.IP + ":" + strconv.FormatInt(n.Port, 10)
				}
			}
		}
	}
	t.Fatalf("redistest: slot %d has no owner", slot)
	return ""
}

// MoveSlot migrates slot, with its keys, from the master that serves it to
// Nodes[to], the way redis-cli --cluster reshard does (IMPORTING,
// MIGRATING, MIGRATE, SETSLOT NODE). Clients that still route the slot to
// the old master get MOVED and must follow it.
func (c *Cluster) MoveSlot(t testing.TB, slot, to int) {
	t.Helper()
	c.BeginMove(t, slot, to)()
}

// BeginMove migrates slot's keys to Nodes[to] but leaves the slot
// MIGRATING on its owner and IMPORTING on the target, so that the owner
// answers ASK for the keys it no longer holds (and TRYAGAIN for a command
// whose keys are split); finish ends the migration with SETSLOT NODE on
// every node, after which the old owner answers MOVED. Keys created on the
// owner after BeginMove stay there until finish migrates them.
func (c *Cluster) BeginMove(t testing.TB, slot, to int) (finish func()) {
	t.Helper()
	return c.startMove(t, slot, to, true)
}

// MarkMigrating marks slot MIGRATING on the master that serves it and
// IMPORTING on Nodes[to], and moves no key yet: the owner serves the keys
// it holds and answers ASK for the others (TRYAGAIN for a command whose
// keys it holds only some of). finish is BeginMove's.
func (c *Cluster) MarkMigrating(t testing.TB, slot, to int) (finish func()) {
	t.Helper()
	return c.startMove(t, slot, to, false)
}

func (c *Cluster) startMove(t testing.TB, slot, to int, moveKeys bool) (finish func()) {
	t.Helper()
	ctx := context.Background()
	owner := c.SlotOwner(t, slot)
	var src *Server
	for _, n := range c.Nodes {
		if n.Addr() == owner {
			src = n
		}
	}
	dst := c.Nodes[to]
	if src == nil || src == dst {
		t.Fatalf("redistest: move slot %d: owner %s, target %s", slot, owner, dst.Addr())
	}
	sc := redis.NewClient(&redis.Options{Addr: src.Addr()})
	dc := redis.NewClient(&redis.Options{Addr: dst.Addr()})
	must := func(err error, what string) {
		t.Helper()
		if err != nil {
			sc.Close()
			dc.Close()
			t.Fatalf("redistest: move slot %d: %s: %v", slot, what, err)
		}
	}
	srcID, err := sc.ClusterMyID(ctx).Result()
	must(err, "myid")
	dstID, err := dc.ClusterMyID(ctx).Result()
	must(err, "myid")
	must(dc.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", srcID).Err(), "importing")
	must(sc.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", dstID).Err(), "migrating")
	migrate := func() {
		for {
			keys, err := sc.ClusterGetKeysInSlot(ctx, slot, 100).Result()
			must(err, "getkeysinslot")
			if len(keys) == 0 {
				return
			}
			args := []any{"MIGRATE", "127.0.0.1", dst.Port(), "", 0, 5000, "KEYS"}
			for _, k := range keys {
				args = append(args, k)
			}
			must(sc.Do(ctx, args...).Err(), "migrate")
		}
	}
	if moveKeys {
		migrate()
	}
	return func() {
		t.Helper()
		migrate()
		must(dc.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err(), "setslot node on target")
		for _, n := range c.Nodes {
			if n == dst {
				continue
			}
			nc := redis.NewClient(&redis.Options{Addr: n.Addr()})
			err := nc.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", dstID).Err()
			nc.Close()
			must(err, "setslot node on "+n.Addr())
		}
		sc.Close()
		dc.Close()
	}
}

// ErrorCount returns how many times the server at addr has replied with
// the error prefix (MOVED, ASK, TRYAGAIN) since it started, from its INFO
// errorstats.
func ErrorCount(t testing.TB, addr, prefix string) int {
	t.Helper()
	info, err := Client(t, addr).Info(context.Background(), "errorstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+prefix+":count="); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return 0
}
