package verdict

import (
	"context"
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
		j.Merge(&allowB, false)
		if *j.Best() != allowB {
			t.Fatalf("after a merge with less remaining: %+v, want %+v", *j.Best(), allowB)
		}
		j.Merge(&allowA, false)
		if *j.Best() != allowB {
			t.Fatalf("a less restrictive merge replaced the best: %+v", *j.Best())
		}
	})
	t.Run("shadow_refusal_described_as_admission", func(t *testing.T) {
		var j Joined
		j.Set(&allowA)
		j.Merge(&denyB, false)
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
		j.Apply([]*limiter.Policy{a}, false)
		j.Apply([]*limiter.Policy{a}, false)
		if j.Applied() != nil {
			t.Fatalf("one policy twice: Applied = %v, want nil", j.Applied())
		}
		j.Apply([]*limiter.Policy{b, a}, false)
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
			j.Apply([]*limiter.Policy{a, b}, false)
		}, []*limiter.Policy{a, b}},
		{"inner_merges_a_more_restrictive_decision", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a}, false)
			j.Merge(&allowB, false)
			j.Apply([]*limiter.Policy{b}, false)
		}, []*limiter.Policy{a, b}},
		{"inner_merges_a_less_restrictive_decision", func(j *Joined) {
			j.Set(&allowB)
			j.Apply([]*limiter.Policy{b}, false)
			j.Merge(&allowA, false)
			j.Apply([]*limiter.Policy{a}, false)
		}, []*limiter.Policy{b, a}},
		{"inner_of_the_same_policy", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a}, false)
			tighter := allowA
			tighter.Remaining = 1
			j.Merge(&tighter, false)
			j.Apply([]*limiter.Policy{a}, false)
		}, nil},
		{"shadow_refusal_of_another_policy", func(j *Joined) {
			j.Set(&allowA)
			j.Apply([]*limiter.Policy{a}, false)
			j.Merge(&denyB, false)
			j.Apply([]*limiter.Policy{b}, false)
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
		j.Apply([]*limiter.Policy{a}, false)
		if got := j.With([]*limiter.Policy{a, b}); !slices.Equal(got, []*limiter.Policy{a, b}) {
			t.Fatalf("With = %v, want [a b]", got)
		}
		if j.Applied() != nil {
			t.Fatal("With changed the Joined")
		}
	})
}

// TestJoinedKeepsEveryDecision: a door that describes every decision
// keeps each policy's, in the order the policies applied, including the
// one a Merge replaced as best and those of a door around that kept
// none; Describe finds the most restrictive among them, each Reported
// one read at the cost its handler has reported so far.
func TestJoinedKeepsEveryDecision(t *testing.T) {
	t0 := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	a := limiter.MustPolicy("a", limiter.PerMinute(10))
	tok := limiter.MustPolicy("tok", limiter.PerMinute(1000)).MustUnit("acme-tokens")
	var none [limiter.MaxWindows]limiter.State
	_, da := limiter.Decide(a, none, t0, 1)     // 9 of 10 left
	_, dt := limiter.Decide(tok, none, t0, 995) // 5 of 1000 left: the best
	room := new([MaxPolicies]limiter.Decision)
	names := func(ds []*limiter.Decision) (out []string) {
		for _, d := range ds {
			out = append(out, d.Policy.Name())
		}
		return out
	}
	t.Run("kept_in_order_best_among_them", func(t *testing.T) {
		var j Joined
		j.Set(&da)
		j.Merge(&dt, true)
		j.Apply([]*limiter.Policy{a, tok}, true)
		j.Keep(Entry{D: da})
		j.Keep(Entry{D: dt})
		best, kept, n := j.Describe(room)
		all := kept[:n]
		if got := names(all); !slices.Equal(got, []string{"a", "tok"}) || best.Policy != tok || best.Remaining != 5 {
			t.Fatalf("Describe: best %v with %d left, all %v; want tok with 5, [a tok]", best.Policy, best.Remaining, got)
		}
	})
	t.Run("replaced_best_kept", func(t *testing.T) {
		var j Joined
		j.Set(&da)
		j.Apply([]*limiter.Policy{a}, true) // one policy alone: nothing kept
		j.Merge(&dt, true)                  // a more restrictive one: a's decision kept
		j.Apply([]*limiter.Policy{tok}, true)
		j.Keep(Entry{D: dt})
		if _, kept, n := j.Describe(room); !slices.Equal(names(kept[:n]), []string{"a", "tok"}) {
			t.Fatalf("all %v, want [a tok]", names(kept[:n]))
		}
	})
	t.Run("reported_read_at_its_cost", func(t *testing.T) {
		var j Joined
		j.Set(&dt)
		j.Merge(&da, true)
		j.Apply([]*limiter.Policy{a, tok}, true)
		var tally Tally
		tally.Init(context.Background(), &Units{List: []string{"acme-tokens"}})
		tally.flags.Or(1) // armed: a charge to settle in the unit
		j.Keep(Entry{D: da})
		j.Keep(Entry{D: dt, Reserved: 995, Unit: "acme-tokens", Tally: &tally})
		if best, _, _ := j.Describe(room); best.Policy != tok || best.Remaining != 5 {
			t.Fatalf("nothing reported: best %v with %d left, want tok at its reservation, 5", best.Policy, best.Remaining)
		}
		if !Report(&tally, "acme-tokens", 95) {
			t.Fatal("the report was refused")
		}
		best, kept, n := j.Describe(room)
		all := kept[:n]
		if best.Policy != a || best.Remaining != 9 || all[1].Remaining != 905 {
			t.Fatalf("95 reported of 995 reserved: best %v with %d left, tokens %d left; want a with 9, tokens 905", best.Policy, best.Remaining, all[1].Remaining)
		}
	})
	t.Run("not_keeping_describes_the_best", func(t *testing.T) {
		var j Joined
		j.Set(&da)
		j.Merge(&dt, false)
		j.Apply([]*limiter.Policy{a, tok}, false)
		if best, _, n := j.Describe(room); n != 0 || best.Policy != tok {
			t.Fatalf("Describe without keeping: best %v, %d kept; want tok, none", best.Policy, n)
		}
	})
}
