package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// SharedAddr is the Redis that `make test` and .ci/run make sure answers.
const SharedAddr = "127.0.0.1:6379"

// A Server is one redis-server process on a loopback port, with no
// persistence. Its methods are safe for concurrent use.
type Server struct {
	t    owner
	port int
	dir  string
	args []string

	mu  sync.Mutex
	cmd *exec.Cmd
}

// StartServer starts a redis-server on a free loopback port, with extra
// command-line arguments, and stops it when the test ends.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, args...)
}

func startServer(o owner, args ...string) *Server {
	o.Helper()
	s := &Server{t: o, port: freePort(o), dir: o.TempDir(), args: args}
	s.start()
	o.Cleanup(s.Kill)
	return s
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Port returns the server's port.
func (s *Server) Port() int { return s.port }

func (s *Server) start() {
	s.t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		s.t.Fatalf("redistest: redis-server is not installed (run scripts/ensure-redis.sh): %v", err)
	}
	args := append([]string{
		"--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir,
		"--logfile", "", "--loglevel", "warning",
	}, s.args...)
	cmd := exec.Command("redis-server", args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("redistest: start redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	if err := waitPing(s.Addr(), 5*time.Second); err != nil {
		s.Kill()
		s.t.Fatalf("redistest: redis-server on %s: %v", s.Addr(), err)
	}
}

// Kill stops the server at once (SIGKILL), as a crash would. Killing a
// stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// Restart kills the server if it runs and starts it again on the same
// port, empty.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	s.start()
}

// waitPing waits until a PING at addr answers.
func waitPing(addr string, within time.Duration) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG within %v: %w", within, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago, whose
// port+10000 (a Cluster node's bus port) is free too.
func FreePort(t testing.TB) int {
	t.Helper()
	return freePort(t)
}

func freePort(t owner) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if port+10000 > 65535 {
			l.Close()
			continue
		}
		bus, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port+10000))
		l.Close()
		if err != nil {
			continue
		}
		bus.Close()
		return port
	}
	t.Fatal("redistest: no free port pair found")
	return 0
}

// Client returns a client for addr, built as the store needs it
// (ContextTimeoutEnabled; retries left at go-redis's default), closed when
// the test ends.
func Client(t testing.TB, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		ContextTimeoutEnabled: true,
		DialTimeout:           200 * time.Millisecond,
		PoolSize:              64,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

// Shared returns a client of the shared Redis at SharedAddr. The test
// fails (never skips) when it does not answer.
func Shared(t testing.TB) *redis.Client {
	t.Helper()
	if err := waitPing(SharedAddr, time.Second); err != nil {
		t.Fatalf("redistest: no Redis at %s (run `make redis`): %v", SharedAddr, err)
	}
	return Client(t, SharedAddr)
}
