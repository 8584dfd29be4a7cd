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
		j.Set(&allowA)
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
	// The list is kept in the order the policies applied, whichever
	// decided: a middleware's limiters, then those of the middlewares
	// inside it, which merge before they apply.
	for _, tt := range []struct {
		name  string
		steps func(j *Joined)
		want  []*limiter.Policy
	}{
		{"second_limiter_decides", func(j *Joined) {
			j.Set(&allowB) // b has less remaining: the best of a middleware's two
			j.Apply([]*limiter.Policy{a, b})
		}, []*limiter.Policy{a, b}},
		{"inner_merges_a_more_restrictive_decision", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a})
			j.Merge(&allowB)
			j.Apply([]*limiter.Policy{b})
		}, []*limiter.Policy{a, b}},
		{"inner_merges_a_less_restrictive_decision", func(j *Joined) {
			j.Set(&allowB)
			j.Apply([]*limiter.Policy{b})
			j.Merge(&allowA)
			j.Apply([]*limiter.Policy{a})
		}, []*limiter.Policy{b, a}},
		{"inner_of_the_same_policy", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a})
			tighter := allowA
			tighter.Remaining = 1
			j.Merge(&tighter)
			j.Apply([]*limiter.Policy{a})
		}, nil},
		{"shadow_refusal_of_another_policy", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a})
			j.Merge(&denyB)
			j.Apply([]*limiter.Policy{b})
		}, []*limiter.Policy{a, b}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var j Joined
			tt.steps(&j)
			if got := j.Applied(); !slices.Equal(got, tt.want) {
				t.Fatalf("Applied = %v, want %v", got, tt.want)
			}
			if tt.want == nil && !slices.Equal(j.With(nil), []*limiter.Policy{j.Best().Policy}) {
				t.Fatalf("With(nil) = %v, want the best decision's policy alone", j.With(nil))
			}
			if tt.want != nil && !slices.Equal(j.With(nil), tt.want) {
				t.Fatalf("With(nil) = %v, want %v", j.With(nil), tt.want)
			}
		})
	}
	t.Run("with_adds_without_changing", func(t *testing.T) {
		var nilJ *Joined
		if got := nilJ.With([]*limiter.Policy{b}); !slices.Equal(got, []*limiter.Policy{b}) {
			t.Fatalf("nil With = %v, want [b]", got)
		}
		var j Joined
		j.Set(&allowA)
		j.Apply([]*limiter.Policy{a})
		if got := j.With([]*limiter.Policy{a, b}); !slices.Equal(got, []*limiter.Policy{a, b}) {
			t.Fatalf("With = %v, want [a b]", got)
		}
		if j.Applied() != nil {
			t.Fatal("With changed the Joined")
		}
	})
}
