package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/testfixture"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestSharedTraffic replays the patterns of the top-level
// testdata/traffic, which the lab's simulator replays too, through a
// limiter over a MemoryStore on a fake clock. In every window each key
// must get exactly min(demand, limit), and the total must be the file's
// expected fixed-window count.
func TestSharedTraffic(t *testing.T) {
	testfixture.EachTraffic(t, func(t *testing.T, file string, tr *testfixture.Traffic) {
		want, ok := tr.Admitted["fixed-window"]
		if !ok {
			t.Fatalf("%s: no fixed-window count in its expect line", file)
		}
		epoch := time.Unix(0, 0)
		clk := limitertest.New(epoch)
		store, err := limiter.NewMemoryStore(limiter.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		l, err := limiter.New(limiter.MustPolicy("traffic", limiter.Rate{Limit: tr.Limit, Window: tr.Window}),
			limiter.WithClock(clk), limiter.WithStore(store))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		type slot struct {
			key    string
			window time.Duration
		}
		demand, admitted := map[slot]int64{}, map[slot]int64{}
		total := 0
		for _, req := range tr.Requests {
			clk.Set(epoch.Add(req.At))
			d, err := l.Allow(context.Background(), req.Key, 1)
			if err != nil {
				t.Fatalf("Allow(%q) at %v: %v", req.Key, req.At, err)
			}
			s := slot{req.Key, req.At.Truncate(tr.Window)}
			demand[s]++
			if d.Allowed {
				admitted[s]++
				total++
			}
		}
		for s, n := range demand {
			if got, want := admitted[s], min(n, tr.Limit); got != want {
				t.Errorf("key %q, window from %v: got %d admitted of %d, want %d", s.key, s.window, got, n, want)
			}
		}
		if total != want {
			t.Errorf("%s: got %d admitted in all, want %d (its expect line)", tr.Name, total, want)
		}
	})
}
