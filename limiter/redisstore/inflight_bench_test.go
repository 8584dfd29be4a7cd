package redisstore

import (
	"context"
	"strconv"
	"testing"
)

// BenchmarkInFlightRedis measures one Acquire and its release on the
// shared Redis, over 10,000 keys: a caller alone, and 64 at once, whose
// holds and releases share rounds. calls/op is the script calls sent per
// request (a hold and a release; fewer when rounds are shared).
func BenchmarkInFlightRedis(b *testing.B) {
	for _, callers := range []int{1, 64} {
		b.Run("callers="+strconv.Itoa(callers), func(b *testing.B) {
			s := newStore(b, sharedClient(b))
			f := newCap(b, s, "bench", 1<<30)
			keys := benchKeys(10_000)
			ctx := context.Background()
			one := func(key string) {
				d, release, err := f.Acquire(ctx, key)
				if err != nil || !d.Allowed {
					b.Fatalf("Acquire: %+v, %v", d, err)
				}
				release()
			}
			benchCallers(b, s, callers, keys, one)
		})
	}
}
