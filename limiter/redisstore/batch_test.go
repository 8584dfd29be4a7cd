package redisstore

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// TestBatchDropsNearlySpentCalls: a call with almost none of the store's
// timeout left is answered as timed out, and does not lend its deadline to
// the fresh calls of the same batch, which are decided.
func TestBatchDropsNearlySpentCalls(t *testing.T) {
	c := sharedClient(t)
	s := newStore(t, c, WithTimeout(time.Second))
	if s.batch == nil {
		t.Fatal("a *redis.Client store has no batcher")
	}
	p := limiter.MustPolicy("batch", limiter.PerMinute(10))
	now := time.Now()
	var batch []*call
	for i := range 4 {
		deadline := now.Add(time.Second)
		if i == 0 {
			deadline = now.Add(time.Millisecond) // the oldest, nearly spent
		}
		batch = append(batch, &call{
			ctx:      context.Background(),
			deadline: deadline,
			req:      limiter.Request{Key: "k" + strconv.Itoa(i), Policy: p, Now: t0, Cost: 1},
			done:     make(chan struct{}, 1),
		})
	}
	calls := append([]*call(nil), batch...) // send reuses batch's array
	s.batch.send(batch, &roundBuf{})
	for i, cl := range calls {
		<-cl.done
		switch {
		case i == 0 && !errors.Is(cl.err, context.DeadlineExceeded):
			t.Errorf("nearly spent call: err %v, want DeadlineExceeded", cl.err)
		case i > 0 && cl.err != nil:
			t.Errorf("fresh call %d: %v, want decided", i, cl.err)
		case i > 0 && !cl.res.allowed:
			t.Errorf("fresh call %d refused: %+v", i, cl.res)
		}
	}
}
