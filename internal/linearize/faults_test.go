package linearize

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// A faultKind injects one kind of fault: apply starts it and returns
// what it did, how long to hold it and how to end it.
type faultKind struct {
	name  string
	apply func(r *run, rng *rand.Rand) (detail string, hold time.Duration, undo func())
}

// inject applies r's faults in turn, one at a time, a seeded gap apart,
// until done; a fault under way when done comes is ended first.
func (r *run) inject(done <-chan struct{}) {
	if len(r.faults) == 0 {
		return
	}
	rng := rand.New(rand.NewPCG(r.seed, 1<<40))
	for i := 0; gap(rng, done); i++ {
		f := r.faults[i%len(r.faults)]
		start := r.rec.now()
		detail, hold, undo := f.apply(r, rng)
		t := time.NewTimer(hold)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
		if undo != nil {
			undo()
		}
		r.rec.fault(Fault{Kind: f.name, Start: start, End: r.rec.now(), Detail: detail})
	}
}

// gap waits a seeded 60 to 180 ms, and reports whether done did not
// come first.
func gap(rng *rand.Rand, done <-chan struct{}) bool {
	t := time.NewTimer(time.Duration(60+rng.IntN(120)) * time.Millisecond)
	defer t.Stop()
	select {
	case <-done:
		return false
	case <-t.C:
		return true
	}
}

// clockStep steps one replica's clock across a boundary of the
// shortest window, within 200 ms of it (a run with stepsBack: back every
// time, within 800 ms), forward and back by turns (the seed says which
// first), by 1.2 s at most (less than the expiry margin, 2 s: a replica
// further behind may find its window's key expired, as documented), for
// 100 to 250 ms, then back.
var clockStep = faultKind{"clock-step", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
	rp := r.reps[rng.IntN(len(r.reps))]
	if r.steps == 0 {
		r.backFirst = rng.IntN(2) == 0
	}
	back := (r.steps%2 == 1) != r.backFirst || r.stepsBack
	r.steps++
	within := int64(200)
	if r.stepsBack {
		within = 800
	}
	d := rp.stepAcross(r.spec.shortest(), back, rng.Int64N(within))
	return fmt.Sprintf("replica %d's clock %+v", rp.id, d), time.Duration(100+rng.IntN(150)) * time.Millisecond,
		func() { rp.step(-d) }
}}

// maxStep bounds a clock step: under the expiry margin.
const maxStep = 1200 * time.Millisecond

// lostReplies drops the next one to three replies of one server, after
// it ran the command: each connection that carried one is closed.
func lostReplies(proxies ...*redistest.Proxy) faultKind {
	return faultKind{"lost-replies", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
		p := proxies[rng.IntN(len(proxies))]
		n := 1 + rng.IntN(3)
		p.DropReplies(n)
		return fmt.Sprintf("%d replies from %s", n, p.Addr()), 200 * time.Millisecond, func() { p.DropReplies(0) }
	}}
}

// connReset closes every client connection of the servers (CLIENT KILL
// TYPE normal), wherever their commands are.
func connReset(admins ...*redis.Client) faultKind {
	return faultKind{"conn-reset", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
		killed := int64(0)
		for _, a := range admins {
			n, err := a.ClientKillByFilter(context.Background(), "TYPE", "normal", "SKIPME", "yes").Result()
			if err != nil {
				r.t.Errorf("CLIENT KILL on %s: %v", a.Options().Addr, err)
			}
			killed += n
		}
		return fmt.Sprintf("%d connections", killed), 0, nil
	}}
}

// pause stops one server (SIGSTOP) for 150 to 300 ms, past the store's
// timeout (100 ms), then lets it go on (SIGCONT): the commands it holds
// run then, after their callers gave up on them.
func pause(servers ...*redistest.Server) faultKind {
	return faultKind{"pause", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
		s := servers[rng.IntN(len(servers))]
		pid := pidOf(r.t, s.Addr())
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			r.t.Errorf("SIGSTOP %s: %v", s.Addr(), err)
		}
		hold := time.Duration(150+rng.IntN(150)) * time.Millisecond
		return fmt.Sprintf("%s for %v", s.Addr(), hold), hold, func() {
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				r.t.Errorf("SIGCONT %s: %v", s.Addr(), err)
			}
		}
	}}
}

// restart shuts one server down (SHUTDOWN: its append-only file is
// flushed, as on SIGTERM) and starts it again on the same port and data.
func restart(servers ...*redistest.Server) faultKind {
	return faultKind{"restart", func(r *run, rng *rand.Rand) (string, time.Duration, func()) {
		s := servers[rng.IntN(len(servers))]
		start := time.Now()
		c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
		err := c.Shutdown(context.Background()).Err()
		c.Close()
		if err != nil && !strings.Contains(err.Error(), "EOF") && !strings.Contains(err.Error(), "closed") {
			r.t.Errorf("SHUTDOWN %s: %v", s.Addr(), err) // go-redis takes the closed connection for the answer
		}
		s.Restart()
		down := time.Since(start).Round(time.Millisecond)
		// A Cluster master answers CLUSTERDOWN after a restart until it
		// finds the cluster whole again (Redis keeps a rebooted master
		// unwritable up to 2 s): the fault lasts until then, or until
		// the workers stop calling (no call after that can fail).
		ok, err := awaitClusterOK(s.Addr(), 5*time.Second, r.stop.Load)
		if err != nil {
			r.t.Errorf("restart %s: %v", s.Addr(), err)
		}
		detail := fmt.Sprintf("%s, down %v", s.Addr(), down)
		if ok {
			detail += fmt.Sprintf(", writable after %v", time.Since(start).Round(time.Millisecond))
		}
		return detail, 0, nil
	}}
}

// awaitClusterOK waits, if the server at addr is a Cluster node, until
// it reports cluster_state:ok (ok) or stop reports true, for at most
// within.
func awaitClusterOK(addr string, within time.Duration, stop func() bool) (ok bool, err error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "cluster").Result()
		if err == nil && !strings.Contains(info, "cluster_enabled:1") {
			cancel()
			return false, nil // not a Cluster node
		}
		if err == nil {
			info, err = c.ClusterInfo(ctx).Result()
		}
		cancel()
		switch {
		case err == nil && strings.Contains(info, "cluster_state:ok"):
			return true, nil
		case stop():
			return false, nil
		}
		if time.Now().After(deadline) {
			return false, fmt.Errorf("cluster_state not ok within %v: %v %q", within, err, info)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pidOf returns the process id of the server at addr.
func pidOf(t testing.TB, addr string) int {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: 2})
	defer c.Close()
	info, err := c.Info(context.Background(), "server").Result()
	if err != nil {
		t.Fatalf("INFO server of %s: %v", addr, err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			pid, err := strconv.Atoi(v)
			if err == nil {
				return pid
			}
		}
	}
	t.Fatalf("INFO server of %s: no process_id", addr)
	return 0
}

// dialVia returns a dialer that reaches each address through its proxy,
// if it has one.
func dialVia(proxies map[string]*redistest.Proxy) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if p, ok := proxies[addr]; ok {
			addr = p.Addr()
		}
		return d.DialContext(ctx, network, addr)
	}
}

func TestStepAcross(t *testing.T) {
	for _, tc := range []struct {
		name    string
		at      int64 // ms after epoch0, a window boundary
		back    bool
		past    int64
		want    time.Duration
		landsAt int64
	}{
		{"forward_to_the_boundary", 300, false, 0, 700 * time.Millisecond, 1000},
		{"forward_past_it", 300, false, 199, 899 * time.Millisecond, 1199},
		{"back_to_the_last_ms_before", 300, true, 0, -301 * time.Millisecond, -1},
		{"back_past_it", 300, true, 199, -500 * time.Millisecond, -200},
		{"forward_from_the_start", 0, false, 199, 1199 * time.Millisecond, 1199},
		{"back_from_the_last_ms", 999, true, 199, -1199 * time.Millisecond, -200},
		{"forward_capped", 0, false, 200, maxStep, 1200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := &replica{clock: limitertest.New(epoch0.Add(time.Duration(tc.at) * time.Millisecond))}
			d := rp.stepAcross(1000, tc.back, tc.past)
			if got := rp.clock.Now().Sub(epoch0).Milliseconds(); d != tc.want || got != tc.landsAt {
				t.Fatalf("at %d, back %v, past %d: stepped %v to %d, want %v to %d", tc.at, tc.back, tc.past, d, got, tc.want, tc.landsAt)
			}
			wantEpoch := 0
			if tc.back {
				wantEpoch = 1
			}
			if rp.epoch != wantEpoch {
				t.Fatalf("steps back counted %d, want %d", rp.epoch, wantEpoch)
			}
		})
	}
}
