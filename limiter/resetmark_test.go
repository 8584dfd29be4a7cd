package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// TestReturnsAfterAResetReturnNothing: a refund, or a settle below its
// reservation, of a request admitted before a Reset returns nothing to
// the fresh count (its units were counted in the budget the Reset ended:
// issue 36); a request admitted after the Reset is refunded as ever; a
// key the Reset did not name, and a window of another length, are not
// touched by its marks.
func TestReturnsAfterAResetReturnNothing(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"refund", "settle"} {
		t.Run(how, func(t *testing.T) {
			clk := limitertest.New(noon)
			l, err := New(MustPolicy("plan", PerHour(10)), WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			returned := func(key string, d Decision, cost int64) {
				t.Helper()
				if how == "refund" {
					err = l.Refund(ctx, key, cost, d)
				} else {
					err = l.Settle(ctx, key, cost, 0, d)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			used := func(key string) int64 {
				t.Helper()
				u, err := l.Usage(ctx, key)
				if err != nil {
					t.Fatal(err)
				}
				return u.Windows[0].Used
			}
			before, _ := l.Allow(ctx, "acme", 3)
			other, _ := l.Allow(ctx, "other", 3)
			clk.Advance(time.Millisecond)
			if err := l.Reset(ctx, "acme"); err != nil {
				t.Fatal(err)
			}
			clk.Advance(time.Millisecond)
			fresh, _ := l.Allow(ctx, "acme", 2)
			returned("acme", before, 3)
			if got := used("acme"); got != 2 {
				t.Fatalf("after a %s of a request admitted before the Reset: %d used, want 2", how, got)
			}
			returned("acme", fresh, 2)
			if got := used("acme"); got != 0 {
				t.Fatalf("after a %s of a request admitted after the Reset: %d used, want 0", how, got)
			}
			returned("other", other, 3)
			if got := used("other"); got != 0 {
				t.Fatalf("a key no Reset named: %d used after its %s, want 0", got, how)
			}
		})
	}
	t.Run("same_millisecond_returns_nothing", func(t *testing.T) {
		clk := limitertest.New(noon)
		l := MustNew(MustPolicy("plan", PerHour(10)), WithClock(clk))
		defer l.Close()
		d, _ := l.Allow(ctx, "acme", 3)
		if err := l.Reset(ctx, "acme"); err != nil {
			t.Fatal(err)
		}
		again, _ := l.Allow(ctx, "acme", 1)
		_ = l.Refund(ctx, "acme", 3, d)
		if u, _ := l.Usage(ctx, "acme"); u.Windows[0].Used != 1 || !again.Allowed {
			t.Fatalf("a charge in the Reset's millisecond was returned into the fresh budget: %d used, want 1", u.Windows[0].Used)
		}
	})
	t.Run("marks_pruned", func(t *testing.T) {
		clk := limitertest.New(noon)
		st, err := NewMemoryStore(WithSweepInterval(0), WithShards(1))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		l := MustNew(MustPolicy("plan", PerSecond(10)), WithClock(clk), WithStore(st))
		defer l.Close()
		for i := range 10 * pruneMarksAt {
			if err := l.Reset(ctx, string(rune('a'+i%26))+string(rune(i))); err != nil {
				t.Fatal(err)
			}
			clk.Advance(10 * time.Millisecond)
		}
		if n := len(st.shards[0].resets); n > 2*pruneMarksAt {
			t.Fatalf("%d marks kept after %d Resets over %v, want at most %d: ended windows' marks are pruned",
				n, 10*pruneMarksAt, 10*pruneMarksAt*10*time.Millisecond, 2*pruneMarksAt)
		}
	})
}
