package redisstore

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

// corruptValues reads testdata/corrupt-values.txt.
func corruptValues(t testing.TB) []string {
	t.Helper()
	f, err := os.Open("testdata/corrupt-values.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.Unquote(line)
		if err != nil {
			t.Fatalf("testdata/corrupt-values.txt: %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

// plainCount is the store's rule for a stored count: a plain decimal
// integer as INCRBY writes it, no sign, no leading zero, at most 18
// digits.
func plainCount(v string) (int64, bool) {
	if v == "" || len(v) > 18 || (len(v) > 1 && v[0] == '0') {
		return 0, false
	}
	for i := range len(v) {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// corruptEvents records the observer's corrupt-value events.
type corruptEvents struct {
	mu   sync.Mutex
	errs []error
}

func (c *corruptEvents) observe(e Event) {
	if errors.Is(e.Err, ErrCorruptValue) {
		c.mu.Lock()
		c.errs = append(c.errs, e.Err)
		c.mu.Unlock()
	}
}

func (c *corruptEvents) named(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, err := range c.errs {
		if strings.Contains(err.Error(), strconv.Quote(key)) {
			return true
		}
	}
	return false
}

// writeCount stores v as key's count for the window of now: the plain
// string under appClock, "<window id>:<v>" under serverClock.
func writeCount(t testing.TB, c redis.UniversalClient, clock clockSource, key, v string) {
	t.Helper()
	ctx := context.Background()
	var err error
	if clock == serverClock {
		var tm time.Time
		if tm, err = c.Time(ctx).Result(); err == nil {
			err = c.Set(ctx, key, serverValue(tm.UnixMilli()/time.Minute.Milliseconds(), v), time.Hour).Err()
		}
	} else {
		err = c.Set(ctx, key, v, time.Hour).Err()
	}
	if err != nil {
		t.Fatal(err)
	}
}

// TestCorruptCountRefusedUnderFailOpen: a count that Lua's tonumber
// reads but INCRBY refuses used to abort the script, and FailOpen took
// the error for an outage and admitted every request. Now the key alone
// is refused, with no error, and the observer is told which key.
func TestCorruptCountRefusedUnderFailOpen(t *testing.T) {
	const limit = 10
	c := sharedClient(t)
	p := limiter.MustPolicy("corruptcount", limiter.PerMinute(limit))
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, v := range corruptValues(t) {
			if _, ok := plainCount(v); ok {
				continue
			}
			t.Run(clock.String()+"/"+strconv.Quote(v), func(t *testing.T) {
				if clock == serverClock {
					awaitServerWindow(t, c, time.Minute)
				}
				var ev corruptEvents
				s := newStore(t, c, withClockSource(clock), WithFailOpen(), WithObserver(ev.observe))
				clk := limitertest.New(t0)
				l := newLimiter(t, p, s, clk)
				key := keyOf(s, "k", p, 0, clk.Now())
				writeCount(t, c, clock, key, v)
				if got := admitted(t, l, "k", 3*limit, nil); got != 0 {
					t.Fatalf("count %q under FailOpen: admitted %d of %d, want 0", v, got, 3*limit)
				}
				if st := s.Stats(); st.Failures != 0 || st.Degraded != 0 {
					t.Fatalf("count %q: %+v, want no failure", v, st)
				}
				if !ev.named(key) {
					t.Fatalf("count %q: observer saw %v, want ErrCorruptValue naming %q", v, ev.errs, key)
				}
			})
		}
	}
}

// sendTogether decides reqs in one script call, through the batcher.
func sendTogether(t testing.TB, s *Store, reqs []limiter.Request) []*call {
	t.Helper()
	if s.batch == nil {
		t.Fatal("store has no batcher")
	}
	var batch []*call
	for _, r := range reqs {
		batch = append(batch, &call{ctx: context.Background(), deadline: time.Now().Add(s.cfg.timeout),
			req: r, done: make(chan struct{}, 1)})
	}
	calls := append([]*call(nil), batch...) // send reuses batch's array
	s.batch.send(batch, &roundBuf{})
	for _, cl := range calls {
		<-cl.done
	}
	return calls
}

// TestCorruptKeyAloneInBatch: one corrupt count in a script call fails
// none of the sound decisions beside it: they are decided and charged
// exactly, and the corrupt key is refused.
func TestCorruptKeyAloneInBatch(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("corruptbatch", limiter.PerMinute(3))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			s := newStore(t, c, withClockSource(clock))
			// "1.0" is below the limit to Lua, so the old script went on to
			// INCRBY it, which fails.
			writeCount(t, c, clock, keyOf(s, "bad", p, 0, t0), "1.0")
			var reqs []limiter.Request
			for _, k := range []string{"a", "bad", "b", "a", "bad", "a", "a"} {
				reqs = append(reqs, limiter.Request{Key: k, Policy: p, Now: t0, Cost: 1})
			}
			calls := sendTogether(t, s, reqs)
			want := []bool{true, false, true, true, false, true, false}
			for i, cl := range calls {
				if cl.err != nil || cl.res.allowed != want[i] {
					t.Errorf("request %d (%s): allowed=%v, %v; want allowed=%v, no error",
						i, cl.req.Key, cl.res.allowed, cl.err, want[i])
				}
			}
			for k, n := range map[string]string{"a": "3", "b": "1"} {
				key := keyOf(s, k, p, 0, t0)
				got, err := storedCount(ctx, c, key, clock)
				if err != nil || got != n {
					t.Errorf("sound key %s charged %q, %v; want %s", k, got, err, n)
				}
			}
		})
	}
}

// TestCorruptValueWithoutExpiryHeals: a corrupt value is refused and left
// as it is, but a key found with no expiry at all is given the one its
// window should have had, so the corruption ends with the window instead
// of refusing the key for ever.
func TestCorruptValueWithoutExpiryHeals(t *testing.T) {
	ctx := context.Background()
	c := sharedClient(t)
	p := limiter.MustPolicy("corruptheals", limiter.PerMinute(10))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			s := newStore(t, c, withClockSource(clock))
			clk := limitertest.New(t0)
			l := newLimiter(t, p, s, clk)
			key := keyOf(s, "k", p, 0, clk.Now())
			writeCount(t, c, clock, key, "5.0")
			if err := c.Persist(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			if got := admitted(t, l, "k", 1, nil); got != 0 {
				t.Fatalf("corrupt count: admitted %d of 1, want 0", got)
			}
			ttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			if ttl <= 0 || ttl > time.Minute+defaultExpiryMargin {
				t.Fatalf("PTTL after a refusal = %v, want the window's expiry, within %v", ttl, time.Minute+defaultExpiryMargin)
			}
			v, err := storedCount(ctx, c, key, clock)
			if err != nil || v != "5.0" {
				t.Fatalf("value after a refusal = %q, %v; want it untouched, %q", v, err, "5.0")
			}
		})
	}
}
