package headers

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/window"
	"github.com/fixedwindow/ratelimit/limiter"
)

// BenchmarkWrite measures Write on the allow path, the one every request
// takes, against a baseline that sets the same three values with
// http.Header.Set and strconv.FormatInt (what a straightforward handler
// does). The header map is reused and cleared, as the server's would be
// fresh per request; clearing keeps its buckets so the map's own growth is
// not counted.
func BenchmarkWrite(b *testing.B) {
	at := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	single := limiter.MustPolicy("default", limiter.PerMinute(1000))
	layered := limiter.MustPolicy("api", limiter.PerMinute(1000), limiter.PerSecond(50))
	decide := func(p *limiter.Policy, allowed bool) limiter.Decision {
		var prior [limiter.MaxWindows]limiter.State
		if !allowed {
			for i := range p.NumRates() {
				id, _, _ := window.ID(at.UnixMilli(), p.Rate(i).Window.Milliseconds())
				prior[i] = limiter.State{Window: id, Count: p.Rate(i).Limit}
			}
		}
		_, d := limiter.Decide(p, prior, at, 1)
		return d
	}
	run := func(name string, d limiter.Decision, opts ...Option) {
		w, err := New(opts...)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			h := http.Header{}
			b.ReportAllocs()
			for b.Loop() {
				clear(h)
				w.Write(h, &d)
			}
		})
	}
	b.Run("baseline_header_set", func(b *testing.B) {
		d := decide(single, true)
		h := http.Header{}
		b.ReportAllocs()
		for b.Loop() {
			clear(h)
			h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
			h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
			h.Set("X-RateLimit-Reset", strconv.FormatInt(d.ResetAt.Unix(), 10))
		}
	})
	run("allow_legacy", decide(single, true))
	run("deny_legacy", decide(single, false))
	run("allow_draft", decide(single, true), WithDraftHeaders())
	run("allow_draft_layered", decide(layered, true), WithDraftHeaders())
}

// BenchmarkWriteManyPolicies measures the draft headers of decisions
// under 5,000 policies in turn, as a door of plans in every zone makes
// (one policy per plan and zone): each policy's header values are
// computed once and found after. (The cache of them once started afresh
// past 4,096, and a rotation past that computed them per request.)
func BenchmarkWriteManyPolicies(b *testing.B) {
	at := time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)
	ds := make([]limiter.Decision, 5_000)
	for i := range ds {
		p := limiter.MustPolicy("plan-"+strconv.Itoa(i), limiter.PerMinute(int64(1000+i)))
		_, ds[i] = limiter.Decide(p, [limiter.MaxWindows]limiter.State{}, at, 1)
	}
	w, err := New(WithDraftHeaders())
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{}
	for i := range ds {
		w.Write(h, &ds[i])
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		clear(h)
		w.Write(h, &ds[i%len(ds)])
		i++
	}
}
