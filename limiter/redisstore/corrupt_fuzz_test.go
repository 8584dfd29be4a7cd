package redisstore

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/redis/go-redis/v9"
)

// FuzzStoredValue runs the script against the real Redis with an arbitrary
// value stored under one key (a string, a list, a set, a sorted set, a
// hash with any field, a serverClock "<window id>:<count>" with any count
// or window id),
// decided in one script call beside sound keys. Whatever the value, the
// call returns no error; the sound keys are decided and charged exactly as
// limiter.Decide says; the odd key is refused, its value untouched,
// unless the value is one the store could have written.
func FuzzStoredValue(f *testing.F) {
	for i, v := range corruptValues(f) {
		for kind := range uint8(7) {
			f.Add(kind, v, []string{"w", "c", "x"}[i%3], i%2 == 0)
		}
	}
	c := sharedClient(f)
	p := limiter.MustPolicy("fuzz", limiter.PerMinute(3))
	f.Fuzz(func(t *testing.T, kind uint8, value, field string, server bool) {
		ctx := context.Background()
		clock := appClock
		if server {
			clock = serverClock
			awaitServerWindow(t, c, time.Minute)
		}
		s := newStore(t, c, withClockSource(clock))
		if _, err := s.Take(ctx, limiter.Request{Key: "b", Policy: p, Now: t0, Cost: 1}); err != nil {
			t.Fatal(err)
		}
		key := keyOf(s, "x", p, 0, t0)
		// Fuzzing runs thousands of inputs on the shared Redis: leave
		// nothing behind.
		t.Cleanup(func() {
			c.Del(context.Background(), key, keyOf(s, "a", p, 0, t0), keyOf(s, "b", p, 0, t0))
		})
		tm, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(tm.UnixMilli()/time.Minute.Milliseconds(), 10)
		if field == "" {
			field = "f"
		}
		// stored is the count the store reads, valid says whether it reads
		// one at all.
		var stored int64
		valid, loose := false, false
		switch kind % 7 {
		case 0:
			err = c.Set(ctx, key, value, time.Hour).Err()
			if server {
				stored, valid, loose = serverCount(value, id)
			} else {
				stored, valid = plainCount(value)
			}
		case 1:
			err = c.RPush(ctx, key, value).Err()
		case 2:
			err = c.HSet(ctx, key, field, value).Err()
		case 3:
			err = c.SAdd(ctx, key, value).Err()
		case 4:
			err = c.ZAdd(ctx, key, redisZ(value)).Err()
		case 5:
			if server {
				err = c.Set(ctx, key, id+":"+value, time.Hour).Err()
			} else {
				err = c.Set(ctx, key, value, time.Hour).Err()
			}
			stored, valid = plainCount(value)
		case 6:
			if server {
				// Any whole id is sound: this window's, one ahead (decided
				// in) or stale (started afresh); each holds at most 1.
				err = c.Set(ctx, key, value+":1", time.Hour).Err()
				_, valid = plainCount(value)
				valid = valid && len(value) <= 15
				stored = 1
			} else {
				err = c.HSet(ctx, key, field, value).Err()
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		before, err := c.Dump(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		var reqs []limiter.Request
		order := []string{"a", "x", "b", "a", "x"}
		for _, k := range order {
			reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
		}
		calls := sendTogether(t, s, reqs)
		counts := map[string]int64{"a": 0, "b": 1, "x": stored}
		for i, cl := range calls {
			if cl.err != nil {
				t.Fatalf("kind %d value %q: request %d (%s): %v", kind%7, value, i, order[i], cl.err)
			}
			k := order[i]
			if k == "x" && loose {
				continue
			}
			if k == "x" && !valid {
				if cl.res.allowed || cl.res.counts[0] != -1 {
					t.Fatalf("kind %d value %q: corrupt key allowed=%v count %d, want refused, -1",
						kind%7, value, cl.res.allowed, cl.res.counts[0])
				}
				continue
			}
			if k == "x" && server && kind%7 == 6 {
				if !cl.res.allowed {
					t.Fatalf("window id %q: refused, want a sound window's answer", value)
				}
				continue
			}
			want := counts[k] <= 2
			if cl.res.allowed != want {
				t.Fatalf("kind %d value %q: request %d (%s) with count %d: allowed=%v, want %v",
					kind%7, value, i, k, counts[k], cl.res.allowed, want)
			}
			if want {
				counts[k]++
			}
		}
		for _, k := range []string{"a", "b"} {
			got, err := storedCount(ctx, c, keyOf(s, k, p, 0, t0), clock)
			if want := strconv.FormatInt(counts[k], 10); err != nil || got != want {
				t.Fatalf("kind %d value %q: sound key %s charged %q, %v; want %s", kind%7, value, k, got, err, want)
			}
		}
		if !valid && !loose {
			if after, _ := c.Dump(ctx, key).Result(); after != before {
				t.Fatalf("kind %d value %q: a refusal of a corrupt key rewrote it", kind%7, value)
			}
		}
	})
}

// redisZ is a sorted-set member.
func redisZ(member string) redis.Z { return redis.Z{Score: 1, Member: member} }

// serverCount reads a value as take.lua reads a serverClock key, for the
// window id: the count when it is "<id>:<count>" of that window (valid);
// loose when it is a sound value of another window (refused in it if full,
// decided in it if ahead, or started afresh: no one answer to check);
// neither when it is corrupt.
func serverCount(value, id string) (count int64, valid, loose bool) {
	w, c, ok := strings.Cut(value, ":")
	if !ok {
		return 0, false, false
	}
	if _, whole := plainCount(w); !whole || len(w) > 15 {
		return 0, false, false
	}
	n, sound := plainCount(c)
	switch {
	case !sound:
		return 0, false, false
	case w == id:
		return n, true, false
	}
	return 0, false, true
}
