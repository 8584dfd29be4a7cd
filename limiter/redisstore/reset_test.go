package redisstore

import (
	"context"
	"testing"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestResetSentOnce: a Reset whose reply is lost after Redis deleted the
// counts fails, and is never sent again. go-redis retried its DEL on a
// new connection, and a DEL that runs twice forgets the charges made
// between the two: the history checker (internal/linearize) found a
// window count back at zero well after a Reset that had returned, every
// decision in between forgotten.
func TestResetSentOnce(t *testing.T) {
	srv := redistest.StartServer(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	admin := redistest.Client(t, srv.Addr())
	s := newStore(t, redistest.Client(t, proxy.Addr()))
	l := newLimiter(t, limiter.MustPolicy("reset-once", limiter.PerHour(10)), s, limitertest.New(t0))
	ctx := context.Background()
	if _, err := l.Allow(ctx, "k", 1); err != nil {
		t.Fatal(err)
	}
	proxy.DropReplies(1)
	err := l.Reset(ctx, "k")
	if got := commandCalls(t, admin, "del"); got != 1 {
		t.Fatalf("DEL ran %d times for one Reset (error %v), want once", got, err)
	}
	if err == nil {
		t.Fatal("Reset whose reply was lost: got nil, want an error (it may or may not have been applied)")
	}
	if proxy.DropsLeft() != 0 {
		t.Fatal("no reply was dropped: the test proved nothing")
	}
}
