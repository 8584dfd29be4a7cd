package sim

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

func TestLayeredRates(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		long, short limiter.Rate
	}{
		{"seed_10_per_second", Config{Limit: 10, Window: time.Second}, limiter.PerSecond(10), limiter.Rate{Limit: 2, Window: 200 * time.Millisecond}},
		{"rounds_short_limit_up", Config{Limit: 12, Window: time.Second}, limiter.PerSecond(12), limiter.Rate{Limit: 3, Window: 200 * time.Millisecond}},
		{"limit_below_five_gives_one", Config{Limit: 3, Window: time.Minute}, limiter.PerMinute(3), limiter.Rate{Limit: 1, Window: 12 * time.Second}},
		{"smallest_window", Config{Limit: 1, Window: 5 * time.Millisecond}, limiter.Rate{Limit: 1, Window: 5 * time.Millisecond}, limiter.Rate{Limit: 1, Window: time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			long, short, err := LayeredRates(tt.cfg)
			if err != nil || long != tt.long || short != tt.short {
				t.Errorf("LayeredRates(%+v) = %v, %v, %v; want %v, %v", tt.cfg, long, short, err, tt.long, tt.short)
			}
		})
	}
}

func TestLayeredBound(t *testing.T) {
	tests := []struct {
		name        string
		long, short limiter.Rate
		want        int64
	}{
		{"ten_per_second", limiter.PerSecond(10), limiter.Rate{Limit: 2, Window: 200 * time.Millisecond}, 12},
		{"twelve_rounded_up", limiter.PerSecond(12), limiter.Rate{Limit: 3, Window: 200 * time.Millisecond}, 18},
		{"limit_one_no_help", limiter.PerSecond(1), limiter.Rate{Limit: 1, Window: 200 * time.Millisecond}, 2},
		{"limit_three_no_help", limiter.PerSecond(3), limiter.Rate{Limit: 1, Window: 200 * time.Millisecond}, 6},
		// The classic layering, 100 per minute with 5 per second: 5 per second lets a minute hold 300, so
		// the short layer caps bursts within a second (10 across a
		// second boundary) but not the span of a minute, which still
		// reaches 2 × 100.
		{"classic_100_per_minute_5_per_second", limiter.PerMinute(100), limiter.PerSecond(5), 200},
		{"short_limit_alone_reaches_long", limiter.PerSecond(4), limiter.Rate{Limit: 4, Window: 200 * time.Millisecond}, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LayeredBound(tt.long, tt.short); got != tt.want {
				t.Errorf("LayeredBound(%v, %v) = %d, want %d", tt.long, tt.short, got, tt.want)
			}
		})
	}
}

// worstLayeredPattern builds the traffic that LayeredBound's argument says
// reaches the bound: a span starting in the middle of short window j of
// long window 1, its tail short windows filled from their ends and its head
// short windows from their starts, no window over its limit.
func worstLayeredPattern(long, short limiter.Rate) *Pattern {
	m := int64(long.Window / short.Window)
	L, S := long.Limit, short.Limit
	bestJ, best := int64(0), int64(-1)
	for j := range m {
		if v := min(L, (m-j)*S) + min(L, (j+1)*S); v > best {
			bestJ, best = j, v
		}
	}
	j := bestJ
	s := long.Window + time.Duration(j)*short.Window + short.Window/2
	p := &Pattern{Name: "worst"}
	add := func(at time.Duration, n int64) {
		for range n {
			p.Requests = append(p.Requests, Request{At: at, Key: DefaultKey})
		}
	}
	// Tail: short windows j..m-1 of long window 1, at most L in all, each
	// request as late as its short window allows within the span.
	left := L
	for i := j; i < m && left > 0; i++ {
		n := min(S, left)
		end := long.Window + time.Duration(i+1)*short.Window
		add(max(s, end-time.Millisecond), n)
		left -= n
	}
	// Head: short windows 0..j of long window 2, at their starts.
	left = L
	for i := int64(0); i <= j && left > 0; i++ {
		n := min(S, left)
		add(2*long.Window+time.Duration(i)*short.Window, n)
		left -= n
	}
	return p
}

// The bound is not only an upper bound: the real layered limiter reaches it.
func TestLayeredBoundIsReached(t *testing.T) {
	for _, limit := range []int64{1, 3, 4, 5, 10, 12, 23, 100} {
		cfg := Config{Limit: limit, Window: time.Second}
		t.Run(ShortDuration(cfg.Window)+"_limit_"+strconv.FormatInt(limit, 10), func(t *testing.T) {
			long, short, err := LayeredRates(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := worstLayeredPattern(long, short)
			rs, err := Simulate(context.Background(), p, cfg, []string{Layered})
			if err != nil {
				t.Fatal(err)
			}
			want := LayeredBound(long, short)
			if rs[0].Rejected != 0 || int64(rs[0].Worst(p, cfg.Window)) != want {
				t.Errorf("limit %d: layered admitted %d, refused %d, worst %d; want none refused and worst = bound %d",
					limit, rs[0].Allowed, rs[0].Rejected, rs[0].Worst(p, cfg.Window), want)
			}
		})
	}
}
