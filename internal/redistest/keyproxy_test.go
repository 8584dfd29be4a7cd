package redistest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestKeyProxy: through a KeyProxy, a pipeline of commands gets its
// replies in order, RESP2 and RESP3 alike (maps, nulls, blobs, nested
// arrays), the script call that declares no key answered by the proxy's
// refusal in its place, and a script call that declares one run by the
// server.
func TestKeyProxy(t *testing.T) {
	p := StartKeyProxy(t, Shared(t).Options().Addr)
	for _, protocol := range []int{2, 3} {
		t.Run(fmt.Sprintf("resp%d", protocol), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			c := redis.NewClient(&redis.Options{Addr: p.Addr(), Protocol: protocol})
			defer c.Close()
			key := fmt.Sprintf("redistest:keyproxy:%d:%d", protocol, time.Now().UnixNano())
			defer Shared(t).Del(ctx, key, key+":h")
			before := p.Refused()
			pipe := c.Pipeline()
			set := pipe.Set(ctx, key, "v", time.Minute)
			hset := pipe.HSet(ctx, key+":h", "a", "1", "b", "2")
			keyless := pipe.Eval(ctx, "return 1", nil)
			hall := pipe.HGetAll(ctx, key+":h")
			keyed := pipe.Eval(ctx, "return {KEYS[1], redis.call('GET', KEYS[1]), {1, {2, 'x'}}}", []string{key})
			missing := pipe.Get(ctx, key+":missing")
			get := pipe.Get(ctx, key)
			_, _ = pipe.Exec(ctx)
			if err := set.Err(); err != nil {
				t.Errorf("SET: %v", err)
			}
			if n, err := hset.Result(); err != nil || n != 2 {
				t.Errorf("HSET: %d, %v; want 2", n, err)
			}
			if err := keyless.Err(); err == nil || err.Error() != DefaultRefusal {
				t.Errorf("EVAL with no key: %v; want the refusal %q", err, DefaultRefusal)
			}
			if m, err := hall.Result(); err != nil || len(m) != 2 || m["a"] != "1" || m["b"] != "2" {
				t.Errorf("HGETALL: %v, %v; want a=1 b=2", m, err)
			}
			if v, err := keyed.Result(); err != nil || fmt.Sprint(v) != fmt.Sprintf("[%s v [1 [2 x]]]", key) {
				t.Errorf("EVAL with a key: %v, %v", v, err)
			}
			if err := missing.Err(); err != redis.Nil {
				t.Errorf("GET of a missing key: %v; want redis.Nil", err)
			}
			if v, err := get.Result(); err != nil || v != "v" {
				t.Errorf("GET: %q, %v; want v", v, err)
			}
			if got := p.Refused() - before; got != 1 {
				t.Errorf("refused %d script calls, want 1", got)
			}
		})
	}
}
