package hitters

import (
	"cmp"
	"slices"
)

// Merge returns the entries of several sketches (several replicas')
// as one sketch's: one entry per key, its counts and errors added, its
// runs of one policy's window joined where they meet or overlap, oldest
// first. A key missing from a sketch may have been pushed out of it:
// its merged count is then low by at most that sketch's least count, as
// with any merge of Space-Saving sketches.
func Merge(sketches ...[]Entry) []Entry {
	byKey := map[string]int{}
	var out []Entry
	for _, es := range sketches {
		for _, e := range es {
			i, ok := byKey[e.Key]
			if !ok {
				byKey[e.Key] = len(out)
				e.Runs = slices.Clone(e.Runs)
				out = append(out, e)
				continue
			}
			m := &out[i]
			m.Count += e.Count
			m.Err += e.Err
			m.First, m.Last = min(m.First, e.First), max(m.Last, e.Last)
			m.Runs = append(m.Runs, e.Runs...)
		}
	}
	for i := range out {
		out[i].Runs = joinRuns(out[i].Runs)
	}
	return out
}

// joinRuns joins the runs of one policy's window that meet or overlap,
// and sorts them by their first refusal.
func joinRuns(runs []Run) []Run {
	slices.SortFunc(runs, func(a, b Run) int {
		return cmp.Or(cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Window, b.Window), cmp.Compare(a.Start, b.Start))
	})
	var out []Run
	for _, r := range runs {
		if n := len(out); n > 0 {
			p := &out[n-1]
			if p.Policy == r.Policy && p.Window == r.Window && r.Start <= p.End {
				p.End = max(p.End, r.End)
				p.First, p.Last = min(p.First, r.First), max(p.Last, r.Last)
				p.Count += r.Count
				p.Limit = max(p.Limit, r.Limit)
				continue
			}
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b Run) int { return cmp.Compare(a.First, b.First) })
	return out
}

// Top returns at most n of entries refused at or after since, the most
// refused first (then the latest refused, then by key, so that the
// order is the same on every replica).
func Top(entries []Entry, since int64, n int) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Last >= since {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(b.Last, a.Last), cmp.Compare(a.Key, b.Key))
	})
	return out[:min(n, len(out))]
}
