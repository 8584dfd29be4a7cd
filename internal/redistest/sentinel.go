package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SentinelMaster is the master name a Sentinels group monitors.
const SentinelMaster = "mymaster"

// A Sentinels is a master, one replica of it and three Redis Sentinels
// (quorum 2, down-after 1 s) watching them, all on loopback ports: a
// failover group for a redis.NewFailoverClient.
type Sentinels struct {
	Master, Replica *Server
	// Addrs are the sentinels' addresses.
	Addrs []string

	t     testing.TB
	mu    sync.Mutex
	procs []*exec.Cmd
}

// StartSentinels starts the group, master and replica with extra
// redis-server arguments each, and waits until the replica is in sync
// and every sentinel knows it and the two other sentinels, so that a
// failover may start at once. Everything stops when the test ends.
func StartSentinels(t testing.TB, masterArgs, replicaArgs []string) *Sentinels {
	t.Helper()
	g := &Sentinels{t: t}
	// No wait before a full sync (5 s by default): the replica is in
	// step at once, and again after it is promoted.
	quick := []string{"--repl-diskless-sync-delay", "0"}
	g.Master = StartServer(t, append(quick, masterArgs...)...)
	g.Replica = StartServer(t, append(append(quick, "--replicaof", "127.0.0.1", strconv.Itoa(g.Master.Port())), replicaArgs...)...)
	t.Cleanup(g.stop)
	deadline := time.Now().Add(15 * time.Second)
	mc := redis.NewClient(&redis.Options{Addr: g.Master.Addr()})
	for {
		info, err := mc.Info(context.Background(), "replication").Result()
		if err == nil && strings.Contains(info, "state=online") {
			break
		}
		if time.Now().After(deadline) {
			mc.Close()
			t.Fatalf("redistest: replica not in sync: %v\n%s", err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mc.Close()
	for range 3 {
		port := FreePort(t)
		dir := t.TempDir()
		conf := filepath.Join(dir, "sentinel.conf")
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\n"+
			"sentinel monitor %s 127.0.0.1 %d 2\n"+
			"sentinel down-after-milliseconds %[3]s 1000\n"+
			"sentinel failover-timeout %[3]s 10000\n"+
			"sentinel parallel-syncs %[3]s 1\n", port, dir, SentinelMaster, g.Master.Port())
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatalf("redistest: sentinel config: %v", err)
		}
		cmd := exec.Command("redis-server", conf, "--sentinel", "--logfile", "", "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			t.Fatalf("redistest: start sentinel: %v", err)
		}
		g.mu.Lock()
		g.procs = append(g.procs, cmd)
		g.mu.Unlock()
		addr := "127.0.0.1:" + strconv.Itoa(port)
		if err := waitPing(addr, 5*time.Second); err != nil {
			t.Fatalf("redistest: sentinel on %s: %v", addr, err)
		}
		g.Addrs = append(g.Addrs, addr)
	}
	for _, addr := range g.Addrs {
		sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
		for {
			m, err := sc.Master(context.Background(), SentinelMaster).Result()
			if err == nil && m["num-slaves"] == "1" && m["num-other-sentinels"] == "2" {
				break
			}
			if time.Now().After(deadline) {
				sc.Close()
				t.Fatalf("redistest: sentinel %s not ready: %v %v", addr, m, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		sc.Close()
	}
	return g
}

// Sentinel returns a client of the first sentinel, closed when the test
// ends.
func (g *Sentinels) Sentinel(t testing.TB) *redis.SentinelClient {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.Addrs[0]})
	t.Cleanup(func() { sc.Close() })
	return sc
}

// MasterAddr returns the master's address as the first sentinel sees it.
func (g *Sentinels) MasterAddr(t testing.TB) string {
	t.Helper()
	sc := redis.NewSentinelClient(&redis.Options{Addr: g.Addrs[0]})
	defer sc.Close()
	a, err := sc.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
	if err != nil {
		t.Fatalf("redistest: sentinel master addr: %v", err)
	}
	return a[0] + ":" + a[1]
}

func (g *Sentinels) stop() {
	g.mu.Lock()
	procs := g.procs
	g.procs = nil
	g.mu.Unlock()
	for _, p := range procs {
		_ = p.Process.Kill()
		_ = p.Wait()
	}
}
