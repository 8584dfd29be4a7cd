package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// AwaitStreaming waits until the master at addr has replicas replicas
// that acknowledge its writes (WAIT), and fails t after 20 s. A replica
// online after a diskless sync gets the master's writes only once it has
// sent its first acknowledgement, up to a second later: until then WAIT
// counts it out, and a test of redisstore.WithReplicaAcks would measure
// its own setup. On a Cluster's master the probe is a key of its slots
// (the others answer MOVED, and are tried no further).
func AwaitStreaming(t testing.TB, addr string, replicas int) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; ; i++ {
		pipe := c.Pipeline()
		set := pipe.Set(ctx, "redistest-probe-"+strconv.Itoa(i%256), 1, time.Second)
		acked := pipe.Do(ctx, "wait", replicas, 100)
		_, _ = pipe.Exec(ctx)
		n, err := acked.Int64()
		if set.Err() == nil && err == nil && n >= int64(replicas) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("redistest: %s: %d of %d replicas acknowledge its writes (%v, %v)", addr, n, replicas, set.Err(), err)
		}
		if err := set.Err(); err != nil && !strings.HasPrefix(err.Error(), "MOVED") {
			time.Sleep(20 * time.Millisecond) // the server's start, not a window
		}
	}
}
