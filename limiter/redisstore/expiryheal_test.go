package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestBareKeyRepairedWhereItMatters: the script looks for a key without
// expiry only on a refusal and when an admission takes a count across a
// power of two (take.lua). A bare count that keeps admitting is repaired
// by the time it reaches the next power of two; a refusal repairs every
// window of the request found bare, also one with room left that another
// window's refusal kept from being charged.
func TestBareKeyRepairedWhereItMatters(t *testing.T) {
	c := sharedClient(t)
	ctx := context.Background()
	for _, clock := range []clockSource{appClock, serverClock} {
		t.Run(clock.String()+"/admitting", func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			p := limiter.MustPolicy("bare-admit", limiter.PerMinute(100))
			s := newStore(t, c, withClockSource(clock), WithOverLimitCache(0))
			clk := limitertest.New(t0.Add(10 * time.Second))
			l := newLimiter(t, p, s, clk)
			if got := admitted(t, l, "k", 5, nil); got != 5 {
				t.Fatalf("admitted %d of 5, want 5", got)
			}
			key := keyOf(s, "k", p, 0, clk.Now())
			want := c.PExpireTime(ctx, key).Val()
			if err := c.Persist(ctx, key).Err(); err != nil {
				t.Fatal(err)
			}
			// 5 to 8: the admission from 7 to 8 crosses a power of two.
			if got := admitted(t, l, "k", 3, nil); got != 3 {
				t.Fatalf("admitted %d of 3, want 3", got)
			}
			checkRepaired(t, c.PExpireTime(ctx, key).Val(), want, clock, "count 8")
		})
		t.Run(clock.String()+"/refused_by_another_window", func(t *testing.T) {
			if clock == serverClock {
				awaitServerWindow(t, c, time.Minute)
			}
			p := limiter.MustPolicy("bare-refuse", limiter.PerMinute(100), limiter.PerSecond(3))
			s := newStore(t, c, withClockSource(clock), WithOverLimitCache(0))
			clk := limitertest.New(t0.Add(10 * time.Second))
			l := newLimiter(t, p, s, clk)
			if got := admitted(t, l, "k", 3, nil); got != 3 {
				t.Fatalf("admitted %d of 3, want 3", got)
			}
			minute := keyOf(s, "k", p, 0, clk.Now())
			want := c.PExpireTime(ctx, minute).Val()
			if err := c.Persist(ctx, minute).Err(); err != nil {
				t.Fatal(err)
			}
			// The second is full: refused, and the minute's count, found
			// bare at 3 (no power of two crossed), is repaired all the same.
			if got := admitted(t, l, "k", 1, nil); got != 0 {
				t.Fatalf("admitted %d of 1 over the second's limit, want 0", got)
			}
			checkRepaired(t, c.PExpireTime(ctx, minute).Val(), want, clock, "a refusal")
		})
	}
}

// checkRepaired compares a repaired key's PEXPIRETIME, got, with want,
// the one it had before its expiry was removed: the same with
// serverClock; with appClock, derived from the request's instant, within
// the time the calls took.
func checkRepaired(t *testing.T, got, want time.Duration, clock clockSource, after string) {
	t.Helper()
	if got < 0 {
		t.Fatalf("PEXPIRETIME after %s: got %v, want the window's expiry (%v)", after, got, want)
	}
	if clock == serverClock && got != want || clock == appClock && (got < want || got > want+time.Second) {
		t.Fatalf("PEXPIRETIME after %s (%v): got %v, want %v", after, clock, got, want)
	}
}
