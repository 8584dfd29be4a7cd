package redisstore

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// BenchmarkReplicaAcks measures a decision with and without
// WithReplicaAcks(1, 50ms), in one run on one master with one replica
// (throwaway servers on loopback), over 10,000 keys: a caller alone,
// whose every decision waits for the replica's acknowledgement, and 64
// at once, whose rounds share one WAIT per server. calls/op is the script
// calls sent per decision.
//
//	go test -run '^$' -bench BenchmarkReplicaAcks -benchmem -count 6 ./limiter/redisstore
func BenchmarkReplicaAcks(b *testing.B) {
	master, _ := replicated(b, 1)
	for _, callers := range []int{1, 64} {
		for _, acks := range []bool{false, true} {
			name := "callers=" + strconv.Itoa(callers) + "/acks=" + strconv.FormatBool(acks)
			b.Run(name, func(b *testing.B) {
				opts := []Option{WithOverLimitCache(0), WithTimeout(time.Second)}
				if acks {
					opts = append(opts, WithReplicaAcks(1, 500*time.Millisecond))
				}
				s := newStore(b, redistest.Client(b, master.Addr()), opts...)
				l := newLimiter(b, limiter.MustPolicy("bench", limiter.PerHour(1<<30)), s, limitertest.New(t0))
				keys := benchKeys(10_000)
				ctx := context.Background()
				one := func(key string) {
					if d, err := l.Allow(ctx, key, 1); err != nil || !d.Allowed {
						b.Fatalf("Allow: %+v, %v", d, err)
					}
				}
				benchCallers(b, s, callers, keys, one)
			})
		}
	}
}
