package hitters

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

const minute = 60_000

// t0 is 2026-07-31 03:12:00 UTC in Unix ms.
const t0 = 1785467520000

// at returns a refusal of key under api's minute window at ms.
func at(key string, ms int64) Refusal {
	start := ms - ms%minute
	return Refusal{Key: key, Policy: "api", Window: "1m0s", Limit: 5, Start: start, End: start + minute, At: ms}
}

func TestRuns(t *testing.T) {
	day := Refusal{Key: "k", Policy: "api", Window: "day@UTC", Limit: 100, Start: t0 - 3*3_600_000, End: t0 + 21*3_600_000, At: t0 + 5}
	for _, tc := range []struct {
		name string
		add  []Refusal
		want []Run
	}{
		{"one_window", []Refusal{at("k", t0+10_000), at("k", t0+40_000)},
			[]Run{{"api", "1m0s", 5, t0, t0 + minute, t0 + 10_000, t0 + 40_000, 2}}},
		{"next_window_joins", []Refusal{at("k", t0+10_000), at("k", t0+minute+1)},
			[]Run{{"api", "1m0s", 5, t0, t0 + 2*minute, t0 + 10_000, t0 + minute + 1, 2}}},
		{"gap_starts_a_run", []Refusal{at("k", t0+10_000), at("k", t0+2*minute)},
			[]Run{{"api", "1m0s", 5, t0, t0 + minute, t0 + 10_000, t0 + 10_000, 1}, {"api", "1m0s", 5, t0 + 2*minute, t0 + 3*minute, t0 + 2*minute, t0 + 2*minute, 1}}},
		{"another_window_of_the_policy", []Refusal{at("k", t0), day},
			[]Run{{"api", "1m0s", 5, t0, t0 + minute, t0, t0, 1}, {"api", "day@UTC", 100, day.Start, day.End, day.At, day.At, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(10)
			for _, rf := range tc.add {
				s.Add(rf)
			}
			e, ok := s.Lookup("k", t0+minute)
			if !ok || e.Count != int64(len(tc.add)) || fmt.Sprint(e.Runs) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v %+v, want count %d runs %v", ok, e, len(tc.add), tc.want)
			}
		})
	}
}

func TestRunsKeepTheLatest(t *testing.T) {
	s := New(1)
	for i := range int64(maxRuns + 3) {
		s.Add(at("k", t0+2*i*minute)) // every other minute: a run each
	}
	e, _ := s.Lookup("k", t0+30*minute)
	if len(e.Runs) != maxRuns || e.Runs[0].First != t0+2*3*minute || e.Count != maxRuns+3 {
		t.Fatalf("got %d runs from %d, count %d; want %d from %d, count %d", len(e.Runs), e.Runs[0].First, e.Count, maxRuns, t0+6*minute, maxRuns+3)
	}
}

// TestAddAtAgesNoFurtherThanNow: a refusal dated ten hours past the
// caller's present is counted, and a sweep it would have caused at its
// own instant forgets nothing refused within the hour.
func TestAddAtAgesNoFurtherThanNow(t *testing.T) {
	s := New(10)
	s.Add(at("real", t0))
	s.AddAt(at("skewed", t0+10*Span), t0+2*minute) // past sweepEvery: a sweep, at t0+2min
	if s.Len() != 2 {
		t.Fatalf("the sketch holds %d keys, want real and skewed", s.Len())
	}
	if _, ok := s.Lookup("real", t0+minute); !ok {
		t.Fatal("a refusal of a minute ago was forgotten after one dated ten hours ahead")
	}
}

// TestForgetsPastTheHour: what was refused more than Span ago is not
// shown, and a sweep frees its place.
func TestForgetsPastTheHour(t *testing.T) {
	s := New(10)
	s.Add(at("old", t0))
	s.Add(at("new", t0+30*minute))
	if _, ok := s.Lookup("old", t0+Span); !ok {
		t.Fatal("a refusal Span ago is forgotten; want it kept to the millisecond")
	}
	if _, ok := s.Lookup("old", t0+Span+1); ok {
		t.Fatal("a refusal older than Span is shown")
	}
	s.Add(at("new", t0+Span+minute))
	if s.Len() != 1 {
		t.Fatalf("after a sweep the sketch holds %d keys, want 1", s.Len())
	}
	if es := s.Entries(t0 + Span + minute); len(es) != 1 || es[0].Key != "new" || es[0].Count != 2 {
		t.Fatalf("entries %+v, want new with 2", es)
	}
}

// TestFlood: 100,000 distinct keys refused once each, among them 3
// keys refused 2,000 times each: the sketch of 1,000 keys holds 1,000,
// never more, and its top 3 are the heavy hitters, each counted at
// least as often as it was refused.
func TestFlood(t *testing.T) {
	const capacity, distinct, heavy = 1000, 100_000, 2000
	s := New(capacity)
	var seq []string
	for i := range distinct {
		seq = append(seq, fmt.Sprintf("flood-%d", i))
	}
	for _, k := range []string{"heavy-a", "heavy-b", "heavy-c"} {
		for range heavy {
			seq = append(seq, k)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	for i, k := range seq {
		s.Add(at(k, t0+int64(i)/100)) // 106,000 refusals in 18 minutes
		if s.Len() > capacity {
			t.Fatalf("after %d refusals the sketch holds %d keys, past its %d", i+1, s.Len(), capacity)
		}
	}
	if s.Len() != capacity {
		t.Fatalf("the sketch holds %d keys, want %d", s.Len(), capacity)
	}
	now := t0 + int64(len(seq))/100
	top := Top(s.Entries(now), now-minute, 3)
	got := map[string]int64{}
	for _, e := range top {
		got[e.Key] = e.Count
	}
	for _, k := range []string{"heavy-a", "heavy-b", "heavy-c"} {
		if got[k] < heavy {
			t.Errorf("top 3 %v: %s counted %d, want at least %d", got, k, got[k], heavy)
		}
	}
}

func TestMerge(t *testing.T) {
	a, b := New(10), New(10)
	a.Add(at("k", t0+1000))
	a.Add(at("only-a", t0+2000))
	b.Add(at("k", t0+minute+5)) // the next window: one run with a's
	b.Add(at("k", t0+5*minute)) // a gap: a run of its own
	m := Merge(a.Entries(t0+10*minute), b.Entries(t0+10*minute))
	if len(m) != 2 {
		t.Fatalf("merged %d keys, want 2: %+v", len(m), m)
	}
	var k Entry
	for _, e := range m {
		if e.Key == "k" {
			k = e
		}
	}
	want := []Run{{"api", "1m0s", 5, t0, t0 + 2*minute, t0 + 1000, t0 + minute + 5, 2}, {"api", "1m0s", 5, t0 + 5*minute, t0 + 6*minute, t0 + 5*minute, t0 + 5*minute, 1}}
	if k.Count != 3 || k.First != t0+1000 || k.Last != t0+5*minute || fmt.Sprint(k.Runs) != fmt.Sprint(want) {
		t.Fatalf("merged k %+v, want count 3, runs %v", k, want)
	}
	if top := Top(m, t0+4*minute, 5); len(top) != 1 || top[0].Key != "k" {
		t.Fatalf("top since minute 4: %+v, want k alone", top)
	}
}

// TestEntriesAreCopies: what Entries returns does not change when the
// sketch does, so that a published summary is a snapshot.
func TestEntriesAreCopies(t *testing.T) {
	s := New(1)
	s.Add(at("a", t0))
	es := s.Entries(t0)
	s.Add(at("b", t0+1)) // takes a's place and its runs' array
	if es[0].Key != "a" || es[0].Runs[0].First != t0 {
		t.Fatalf("a copy changed: %+v", es[0])
	}
}
