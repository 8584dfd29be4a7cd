package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// TestResetSentOnce: a Reset whose reply is lost after Redis deleted the
// counts fails, and is never sent again. go-redis retried the Reset's
// DEL on a new connection, and a reset that runs twice forgets the
// charges made between the two: the history checker (internal/linearize)
// found a window count back at zero well after a Reset that had
// returned, every decision in between forgotten. The Reset is now a
// script (reset.lua), sent once as every script call is.
func TestResetSentOnce(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	admin := redistest.Client(t, srv.Addr())
	s := newStore(t, redistest.Client(t, proxy.Addr()))
	l := newLimiter(t, limiter.MustPolicy("reset-once", limiter.PerHour(10)), s, limitertest.New(t0))
	ctx := context.Background()
	if err := l.Reset(ctx, "k"); err != nil { // loads reset.lua: the next one is one EVALSHA
		t.Fatal(err)
	}
	if _, err := l.Allow(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	before := commandCalls(t, admin, "del")
	proxy.DropReplies(1)
	err := l.Reset(ctx, "k")
	if got := commandCalls(t, admin, "del") - before; got != 1 {
		t.Fatalf("the reset's DEL ran %d times for one Reset (error %v), want once", got, err)
	}
	if err == nil {
		t.Fatal("Reset whose reply was lost: got nil, want an error (it may or may not have been applied)")
	}
	if proxy.DropsLeft() != 0 {
		t.Fatal("no reply was dropped: the test proved nothing")
	}
}

// TestResetForgetsLeasesGrantedDuringIt: a lease granted while a Reset
// is under way, from the counts its DEL is about to delete, is forgotten
// with them. Reset forgot the key's leases before its DEL only, so a
// decision that set out after that and leased before the DEL kept units
// charged to counts that no longer existed, and the replica admitted
// them beside the fresh budget: the history checker (internal/linearize,
// redis-leases-reset) found a replica's admissions past the limit right
// after its own Reset.
func TestResetForgetsLeasesGrantedDuringIt(t *testing.T) {
	ctx := context.Background()
	s, req, h := holdScript(t, resetHash, resetSource)
	h.leaseDuring(t, s, req, "Reset", func() error { return s.Reset(ctx, req.Key, req.Policy, t0) })
	admitted := 0
	for range 12 {
		d, err := s.Take(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	if admitted != 8 {
		t.Fatalf("admitted after the Reset: got %d, want the limit 8", admitted)
	}
}

// holdScript returns a leasing store on the shared Redis whose first
// call of one script (hash, source) h holds for h.leaseDuring, and a
// request of cost 1 under a limit of 8.
func holdScript(t *testing.T, hash, source string) (*Store, limiter.Request, *holdHook) {
	c := redistest.Client(t, redistest.Shared(t).Options().Addr)
	h := &holdHook{hash, source, make(chan struct{}), make(chan struct{})}
	c.AddHook(h)
	s := newStore(t, c, WithLeases(50*time.Millisecond, 2), WithOverLimitCache(0))
	p := limiter.MustPolicy("held", limiter.PerHour(8))
	return s, limiter.Request{Key: "k", Policy: p, Now: t0, Cost: 1}, h
}

// leaseDuring runs op (named what), whose script call h holds, and
// meanwhile takes req twice on s, so that the second leases from the
// counts before op's script runs; then lets the script go. It fails the
// test unless a lease was granted so and op succeeded.
func (h *holdHook) leaseDuring(t *testing.T, s *Store, req limiter.Request, what string, op func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- op() }()
	<-h.held // op has forgotten or ended the key's lease; its script waits
	for range 2 {
		if _, err := s.Take(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if s.leases.held(req.Policy, req.Key) == 0 {
		t.Fatalf("no lease granted while the %s ran: the test proved nothing", what)
	}
	close(h.hold)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// holdHook holds a call of one script (a Reset's, its DEL; a settle's)
// until hold is closed, closing held when one comes.
type holdHook struct {
	hash, source string
	held, hold   chan struct{}
}

func (holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if runs(cmd, h.hash, h.source) {
			close(h.held)
			<-h.hold
		}
		return next(ctx, cmd)
	}
}

// runs reports whether cmd runs the script of that hash and source.
func runs(cmd redis.Cmder, hash, source string) bool {
	args := cmd.Args()
	if len(args) < 2 {
		return false
	}
	switch cmd.Name() {
	case "evalsha":
		return args[1] == hash
	case "eval":
		return args[1] == source
	}
	return false
}

func (holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
