package redisstore

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/redis/go-redis/v9"
)

func TestNewValidates(t *testing.T) {
	c := sharedClient(t)
	noCtx := redis.NewClient(&redis.Options{Addr: redistest.SharedAddr})
	defer noCtx.Close()
	noCtxRing := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": redistest.SharedAddr}})
	defer noCtxRing.Close()
	tests := []struct {
		name   string
		client redis.UniversalClient
		opts   []Option
		want   error
	}{
		{"nil_client", nil, nil, errNilClient},
		{"client_without_context_timeouts", noCtx, nil, errContextTimeout},
		{"ring_without_context_timeouts", noCtxRing, nil, errContextTimeout},
		{"brace_in_prefix", c, []Option{WithPrefix("a{b")}, ErrInvalidOption},
		{"zero_timeout", c, []Option{WithTimeout(0)}, ErrInvalidOption},
		{"sub_ms_margin", c, []Option{WithExpiryMargin(time.Microsecond)}, ErrInvalidOption},
		{"zero_divisor", c, []Option{WithFailLocal(0)}, ErrInvalidOption},
		{"negative_divisor", c, []Option{WithFailLocal(-2)}, ErrInvalidOption},
		{"fail_local_and_fail_open", c, []Option{WithFailOpen(), WithFailLocal(3)}, ErrInvalidOption},
		{"fail_open_and_fail_local", c, []Option{WithFailLocal(3), WithFailOpen()}, ErrInvalidOption},
		{"fail_local_twice", c, []Option{WithFailLocal(2), WithFailLocal(3)}, ErrInvalidOption},
		{"unknown_clock", c, []Option{withClockSource(9)}, ErrInvalidOption},
		{"breaker_zero_failures", c, []Option{WithBreaker(0, time.Second)}, ErrInvalidOption},
		{"negative_cache", c, []Option{WithOverLimitCache(-1)}, ErrInvalidOption},
		{"zero_batch", c, []Option{withBatching(0, 1)}, ErrInvalidOption},
		{"nil_option", c, []Option{nil}, ErrInvalidOption},
		{"batch_too_big_for_lua_stack", c, []Option{withBatching(maxBatchSize+1, 1)}, ErrInvalidOption},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(tc.client, tc.opts...)
			if !errors.Is(err, tc.want) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("New: got %v, want %v", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidOption) {
				t.Fatalf("New: got %v, want it to wrap ErrInvalidOption", err)
			}
		})
	}
}

func TestTakeRejectsBadRequests(t *testing.T) {
	s := newStore(t, sharedClient(t))
	p := limiter.MustPolicy("bad", limiter.PerSecond(1))
	tests := []struct {
		name string
		req  limiter.Request
		want error
	}{
		{"nil_policy", limiter.Request{Key: "k", Cost: 1, Now: t0}, limiter.ErrInvalidPolicy},
		{"zero_cost", limiter.Request{Key: "k", Policy: p, Now: t0}, limiter.ErrInvalidCost},
		{"empty_key", limiter.Request{Policy: p, Cost: 1, Now: t0}, limiter.ErrInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Take(context.Background(), tc.req); !errors.Is(err, tc.want) {
				t.Fatalf("Take(%+v): got %v, want %v", tc.req, err, tc.want)
			}
		})
	}
	s.Close()
	if _, err := s.Take(context.Background(), limiter.Request{Key: "k", Policy: p, Cost: 1, Now: t0}); !errors.Is(err, limiter.ErrClosed) {
		t.Fatalf("Take after Close: got %v, want ErrClosed", err)
	}
}

// TestKeyLayout checks the documented keys: prefix, hash tag, policy id,
// window, and (appClock) window id; and the value kept in each.
func TestKeyLayout(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("api", limiter.PerMinute(100), limiter.PerSecond(5))
	at := t0.Add(1500 * time.Millisecond)
	for _, tc := range []struct {
		name  string
		clock clockSource
		key   string
		want  []string
	}{
		{"app_clock", appClock, "alice", []string{
			"{alice}:api:60000:" + strconv.FormatInt(at.UnixMilli()/60000, 10),
			"{alice}:api:1000:" + strconv.FormatInt(at.UnixMilli()/1000, 10),
		}},
		{"server_clock", serverClock, "alice", []string{
			"{alice}:api:60000",
			"{alice}:api:1000",
		}},
		{"braces_escaped", appClock, "a}b{%", []string{
			"{a%7Db%7B%25}:api:60000:" + strconv.FormatInt(at.UnixMilli()/60000, 10),
			"{a%7Db%7B%25}:api:1000:" + strconv.FormatInt(at.UnixMilli()/1000, 10),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t, c, withClockSource(tc.clock))
			if _, err := s.Take(ctx, limiter.Request{Key: tc.key, Policy: p, Now: at, Cost: 2}); err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.want {
				full := s.cfg.prefix + k
				got, err := storedCount(ctx, c, full, tc.clock)
				if err != nil || got != "2" {
					t.Errorf("key %q: got %q, %v; want count 2", full, got, err)
				}
			}
		})
	}
}

// keyOf returns the appClock key of p's window i for key at instant at.
func keyOf(s *Store, key string, p *limiter.Policy, i int, at time.Time) string {
	pk := s.keys.get(p)
	return appendKeys(nil, s.cfg.prefix, key, pk, i+1, s.cfg.clock, at.UnixMilli())[i]
}

// TestExpirySetOnce: the window's expiry is set when its count is created
// and never moved by later traffic (the INCR-then-EXPIRE trap), and it is
// the window's end plus the margin.
func TestExpirySetOnce(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("ttl", limiter.PerMinute(1000))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			s := newStore(t, c, withClockSource(clock), WithExpiryMargin(2*time.Second))
			clk := limitertest.New(t0)
			l := newLimiter(t, p, s, clk)
			if _, err := l.Allow(ctx, "k", 1); err != nil {
				t.Fatal(err)
			}
			key := keyOf(s, "k", p, 0, t0)
			first, err := c.PExpireTime(ctx, key).Result()
			if err != nil || first <= 0 {
				t.Fatalf("PEXPIRETIME %s: %v, %v", key, first, err)
			}
			ttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			switch clock {
			case appClock: // created at the window's start: 60s + 2s
				if ttl <= 61*time.Second || ttl > 62*time.Second {
					t.Fatalf("PTTL after creation: got %v, want in (61s, 62s]", ttl)
				}
			case serverClock: // Redis's window end + 2s
				if ms := first.Milliseconds(); ms%60000 != 2000 {
					t.Fatalf("PEXPIRETIME %d: got %d ms past a minute, want 2000", ms, ms%60000)
				}
			}
			for range 50 {
				clk.Advance(500 * time.Millisecond)
				if _, err := l.Allow(ctx, "k", 1); err != nil {
					t.Fatal(err)
				}
				now, err := c.PExpireTime(ctx, key).Result()
				if err != nil || now != first {
					t.Fatalf("PEXPIRETIME moved under traffic: got %d (%v), want %d", now, err, first)
				}
			}
		})
	}
}

// TestRefusalWritesNothing: a refusal (cost above what is left) and a
// Peek change no count and no expiry.
func TestRefusalWritesNothing(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("deny", limiter.PerMinute(5), limiter.PerSecond(3))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Second)
			}
			s := newStore(t, c, withClockSource(clock), WithOverLimitCache(0))
			clk := limitertest.New(t0)
			l := newLimiter(t, p, s, clk)
			if d, err := l.Allow(ctx, "k", 2); err != nil || !d.Allowed {
				t.Fatalf("Allow(2): %+v, %v", d, err)
			}
			snap := func() [2][2]int64 {
				var out [2][2]int64
				for i := range 2 {
					k := keyOf(s, "k", p, i, t0)
					v, _ := storedCount(ctx, c, k, clock)
					out[i][0], _ = strconv.ParseInt(v, 10, 64)
					out[i][1] = c.PExpireTime(ctx, k).Val().Milliseconds()
				}
				return out
			}
			before := snap()
			if before[0][0] != 2 || before[1][0] != 2 {
				t.Fatalf("counts after Allow(2): got %v, want 2 in both windows", before)
			}
			for _, tc := range []struct {
				name string
				cost int64
				peek bool
			}{
				{"cost_over_second_window", 2, false},
				{"cost_over_limit", 6, false},
				{"peek_that_would_pass", 1, true},
				{"peek_that_would_fail", 4, true},
			} {
				var d limiter.Decision
				var err error
				if tc.peek {
					d, err = l.Peek(ctx, "k", tc.cost)
				} else {
					d, err = l.Allow(ctx, "k", tc.cost)
				}
				if err != nil || (!tc.peek && d.Allowed) {
					t.Fatalf("%s: got %+v, %v", tc.name, d, err)
				}
				if got := snap(); got != before {
					t.Fatalf("%s wrote: got %v, want %v", tc.name, got, before)
				}
			}
		})
	}
}

// TestRepairsKeyWithoutExpiry: a count found with no expiry (a foreign
// PERSIST, a restore) gets the expiry it should have had, on the next
// decision, even a refusal.
func TestRepairsKeyWithoutExpiry(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("repair", limiter.PerMinute(2))
	for _, clock := range []clockSource{appClock, serverClock} {
		for _, refused := range []bool{false, true} {
			name := clock.String() + "/admitted"
			if refused {
				name = clock.String() + "/refused"
			}
			t.Run(name, func(t *testing.T) {
				if clock == serverClock {
					awaitServerWindow(t, c, time.Minute)
				}
				s := newStore(t, c, withClockSource(clock), WithOverLimitCache(0))
				clk := limitertest.New(t0.Add(10 * time.Second))
				l := newLimiter(t, p, s, clk)
				n := 1
				if refused {
					n = 2
				}
				for range n {
					if _, err := l.Allow(ctx, "k", 1); err != nil {
						t.Fatal(err)
					}
				}
				key := keyOf(s, "k", p, 0, clk.Now())
				want := c.PExpireTime(ctx, key).Val()
				if err := c.Persist(ctx, key).Err(); err != nil {
					t.Fatal(err)
				}
				if ttl := c.PTTL(ctx, key).Val(); ttl != -1 {
					t.Fatalf("PTTL after PERSIST: got %v, want -1", ttl)
				}
				d, err := l.Allow(ctx, "k", 1)
				if err != nil || d.Allowed == refused {
					t.Fatalf("Allow: got %+v, %v; want allowed=%v", d, err, !refused)
				}
				got := c.PExpireTime(ctx, key).Val()
				if clock == serverClock && got != want {
					t.Fatalf("repaired PEXPIRETIME: got %v, want %v", got, want)
				}
				// appClock derives the expiry from the request's instant:
				// the same instant here, so it lands within the time the
				// calls took.
				if clock == appClock && (got < want || got > want+time.Second) {
					t.Fatalf("repaired PEXPIRETIME: got %v, want about %v", got, want)
				}
			})
		}
	}
}

// TestLayeredAllOrNothing: a request refused by one window charges none.
func TestLayeredAllOrNothing(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("layers", limiter.PerMinute(7), limiter.PerSecond(5))
	s := newStore(t, c, WithOverLimitCache(0))
	clk := limitertest.New(t0)
	l := newLimiter(t, p, s, clk)
	for i := range 6 {
		d, err := l.Allow(ctx, "k", 1)
		if err != nil || d.Allowed != (i < 5) {
			t.Fatalf("call %d: got %+v, %v", i, d, err)
		}
	}
	if got := c.Get(ctx, keyOf(s, "k", p, 0, clk.Now())).Val(); got != "5" {
		t.Fatalf("minute count after a refusal by the second window: got %s, want 5", got)
	}
	clk.Advance(time.Second)
	for i := range 3 {
		d, err := l.Allow(ctx, "k", 1)
		if err != nil || d.Allowed != (i < 2) {
			t.Fatalf("second 2, call %d: got %+v, %v", i, d, err)
		}
	}
	if got := c.Get(ctx, keyOf(s, "k", p, 1, clk.Now())).Val(); got != "2" {
		t.Fatalf("second-window count after a refusal by the minute: got %s, want 2", got)
	}
}

// TestReset clears Redis and the over-limit cache.
func TestReset(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	p := limiter.MustPolicy("reset", limiter.PerMinute(2))
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String(), func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			clk := limitertest.New(t0.Add(time.Second))
			s := newStore(t, c, withClockSource(clock))
			l := newLimiter(t, p, s, clk)
			for range 3 {
				if _, err := l.Allow(ctx, "k", 1); err != nil {
					t.Fatal(err)
				}
			}
			if s.Stats().CachedKeys != 1 {
				t.Fatalf("cached keys: got %d, want 1", s.Stats().CachedKeys)
			}
			if err := l.Reset(ctx, "k"); err != nil {
				t.Fatal(err)
			}
			if s.Stats().CachedKeys != 0 {
				t.Fatalf("cached keys after Reset: got %d, want 0", s.Stats().CachedKeys)
			}
			d, err := l.Allow(ctx, "k", 1)
			if err != nil || !d.Allowed || d.Remaining != 1 {
				t.Fatalf("Allow after Reset: got %+v, %v; want allowed with 1 left", d, err)
			}
		})
	}
}

// TestCloseUnderLoad closes the store while callers decide: every call
// ends with a decision or ErrClosed, and no batch outlives Close (leakcheck
// in TestMain checks the goroutines).
func TestCloseUnderLoad(t *testing.T) {
	s := newStore(t, sharedClient(t))
	p := limiter.MustPolicy("close", limiter.PerHour(1000))
	var wg, started sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		started.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				_, err := s.Take(context.Background(), limiter.Request{Key: strconv.Itoa(i), Policy: p, Now: t0, Cost: 1})
				if j == 0 {
					started.Done()
				}
				if errors.Is(err, limiter.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Take: %v", err)
					return
				}
			}
		}()
	}
	started.Wait() // every caller has decided once: Close lands mid-load
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}
