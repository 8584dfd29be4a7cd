package redisstore

import (
	"context"
	"strconv"
	"testing"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// BenchmarkSettleRedis measures a request admitted at a reservation of 1
// and settled at 3 (a decision and a settle) on the shared Redis, over
// 10,000 keys: a caller alone, and 64 at once, whose decisions and
// settles share rounds. calls/op is the script calls sent per request
// (a decision and a settle: 2 alone; fewer when rounds are shared).
func BenchmarkSettleRedis(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s := newStore(b, sharedClient(b))
			l := newLimiter(b, limiter.MustPolicy("bench", limiter.PerHour(1<<30)), s, limitertest.New(t0))
			keys := benchKeys(10_000)
			ctx := context.Background()
			one := func(key string) {
				d, err := l.Allow(ctx, key, 1)
				if err != nil || !d.Allowed {
					b.Fatalf("Allow: %+v, %v", d, err)
				}
				if err := l.Settle(ctx, key, 1, 3, d); err != nil {
					b.Fatalf("Settle: %v", err)
				}
			}
			benchCallers(b, s, callers, keys, one)
		})
	}
}
