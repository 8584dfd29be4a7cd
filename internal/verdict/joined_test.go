package verdict

import (
	"slices"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

func TestJoined(t *testing.T) {
	t0 := time.Date(2026, 7, 31, 12, 0, 0, 0, time.UTC)
	a := limiter.MustPolicy("a", limiter.PerMinute(10))
	b := limiter.MustPolicy("b", limiter.PerHour(100))
	allowA := limiter.Decision{Allowed: true, Remaining: 5, ResetAt: t0.Add(time.Minute), Policy: a}
	allowB := limiter.Decision{Allowed: true, Remaining: 2, ResetAt: t0.Add(time.Hour), Policy: b}
	denyB := limiter.Decision{Allowed: false, Remaining: 0, ResetAt: t0.Add(time.Hour), RetryAfter: time.Hour, Policy: b}

	t.Run("zero_applied_nothing", func(t *testing.T) {
		var j Joined
		if j.Applied() != nil {
			t.Fatalf("zero Joined: applied %v", j.Applied())
		}
	})
	t.Run("first_decision_kept_until_a_more_restrictive", func(t *testing.T) {
		var j Joined
		j.Set(&allowA)
		if *j.Best() != allowA {
			t.Fatalf("after Set: %+v, want %+v", *j.Best(), allowA)
		}
		j.Merge(&allowB)
		if *j.Best() != allowB {
			t.Fatalf("after a merge with less remaining: %+v, want %+v", *j.Best(), allowB)
		}
		j.Merge(&allowA)
		if *j.Best() != allowB {
			t.Fatalf("a less restrictive merge replaced the best: %+v", *j.Best())
		}
	})
	t.Run("shadow_refusal_described_as_admission", func(t *testing.T) {
		var j Joined
		j.Set(&allowA)
		j.Merge(&denyB)
		d := j.Described()
		if !d.Allowed || d.RetryAfter != 0 || d.Remaining != 0 || d.Policy != b {
			t.Fatalf("Described = %+v, want an admission of b with nothing remaining", d)
		}
		if j.Best().Allowed {
			t.Fatal("Best is no longer the refusal")
		}
	})
	t.Run("policies_once_in_order", func(t *testing.T) {
		var j Joined
		j.Apply([]*limiter.Policy{a})
		j.Apply([]*limiter.Policy{a})
		if j.Applied() != nil {
			t.Fatalf("one policy twice: Applied = %v, want nil", j.Applied())
		}
		j.Apply([]*limiter.Policy{b, a})
		if got := j.Applied(); !slices.Equal(got, []*limiter.Policy{a, b}) {
			t.Fatalf("Applied = %v, want [a b]", got)
		}
	})
	t.Run("with_adds_without_changing", func(t *testing.T) {
		var nilJ *Joined
		if got := nilJ.With([]*limiter.Policy{b}); !slices.Equal(got, []*limiter.Policy{b}) {
			t.Fatalf("nil With = %v, want [b]", got)
		}
		var j Joined
		j.Apply([]*limiter.Policy{a})
		if got := j.With([]*limiter.Policy{a, b}); !slices.Equal(got, []*limiter.Policy{a, b}) {
			t.Fatalf("With = %v, want [a b]", got)
		}
		if j.Applied() != nil {
			t.Fatal("With changed the Joined")
		}
	})
}
