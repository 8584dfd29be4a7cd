package hitters

import (
	"container/heap"
	"slices"
)

// Span is how far back a sketch remembers, in milliseconds: an hour.
// An entry or a run whose last refusal is older is forgotten.
const Span = 3_600_000

// maxRuns is the most runs an entry keeps, its latest: a key refused
// under a minute's window in every other minute of the hour has 30, and
// the page answers "why refused" for its eight latest.
const maxRuns = 8

// sweepEvery is how often, in the refusals' milliseconds, Add forgets
// what is older than Span: once a minute, a pass over the sketch.
const sweepEvery = 60_000

// A Refusal is one refused request, as a door saw it.
type Refusal struct {
	Key    string
	Policy string // the policy's name
	Window string // the deciding window's name ("1m0s", "day@Europe/Paris")
	Limit  int64  // its limit
	Start  int64  // the start of the refused window, Unix ms
	End    int64  // its end (its reset), Unix ms
	At     int64  // the decision's instant, Unix ms
}

// A Run is a key's refusals under one policy's window, in one window or
// in windows that followed one another without a gap.
type Run struct {
	Policy string `json:"p"`
	Window string `json:"w"`
	Limit  int64  `json:"l,omitempty"`
	Start  int64  `json:"s"` // the start of its first refused window, Unix ms
	End    int64  `json:"e"` // the end of its last refused window, Unix ms
	First  int64  `json:"f"` // its first refusal, Unix ms
	Last   int64  `json:"t"` // its last refusal, Unix ms
	Count  int64  `json:"n"` // refusals seen in it
}

// An Entry is one key of a sketch: how many times it was refused (high
// by at most Err: the count of the key it took the place of), and its
// runs, oldest first, counted exactly since it entered the sketch.
type Entry struct {
	Key   string `json:"k"`
	Count int64  `json:"n"`
	Err   int64  `json:"x,omitempty"`
	First int64  `json:"f"`
	Last  int64  `json:"t"`
	Runs  []Run  `json:"r"`
}

// A Sketch is a Space-Saving sketch of the keys refused in the last
// Span, at most its capacity of them. It is not safe for concurrent use.
// The zero Sketch is not usable: build one with New.
type Sketch struct {
	capacity int
	heap     entries // a min-heap by Count
	nodes    map[string]*node
	now      int64 // the latest refusal's instant, up to its caller's present (AddAt)
	swept    int64
}

type node struct {
	Entry
	i int // its place in heap
}

// New returns an empty sketch of capacity keys (at least 1).
func New(capacity int) *Sketch {
	capacity = max(capacity, 1)
	return &Sketch{capacity: capacity, nodes: make(map[string]*node, capacity)}
}

// Len returns how many keys the sketch holds: never more than its
// capacity.
func (s *Sketch) Len() int { return len(s.heap) }

// Add counts rf. A key not in a full sketch takes the place of the key
// counted least, and its count plus one (Space-Saving), so that a key
// refused often enough is never pushed out by a flood of others.
func (s *Sketch) Add(rf Refusal) { s.AddAt(rf, rf.At) }

// AddAt counts rf as Add does, but the sketch ages by rf's instant only
// up to now, the caller's present: a refusal dated far ahead of it (by a
// limiter whose clock is wrong) is counted, and cannot make every other
// key look older than Span and be forgotten.
func (s *Sketch) AddAt(rf Refusal, now int64) {
	s.now = max(s.now, min(rf.At, now))
	if s.now-s.swept >= sweepEvery {
		s.sweep()
	}
	n, ok := s.nodes[rf.Key]
	switch {
	case ok:
		n.Count++
		n.First, n.Last = min(n.First, rf.At), max(n.Last, rf.At)
	case len(s.heap) < s.capacity:
		n = &node{Entry: Entry{Key: rf.Key, Count: 1, First: rf.At, Last: rf.At}}
		heap.Push(&s.heap, n)
		s.nodes[rf.Key] = n
	default:
		n = s.heap[0]
		delete(s.nodes, n.Key)
		n.Entry = Entry{Key: rf.Key, Count: n.Count + 1, Err: n.Count, First: rf.At, Last: rf.At, Runs: n.Runs[:0]}
		s.nodes[rf.Key] = n
	}
	n.Runs = addRun(n.Runs, rf)
	heap.Fix(&s.heap, n.i)
}

// addRun counts rf in the latest run of its policy's window if rf's
// window is that run's last or the next one, else in a new run; the
// oldest run goes past maxRuns.
func addRun(runs []Run, rf Refusal) []Run {
	for i := len(runs) - 1; i >= 0; i-- {
		r := &runs[i]
		if r.Policy != rf.Policy || r.Window != rf.Window {
			continue
		}
		if rf.Start <= r.End && rf.End >= r.Start {
			r.Start, r.End = min(r.Start, rf.Start), max(r.End, rf.End)
			r.First, r.Last = min(r.First, rf.At), max(r.Last, rf.At)
			r.Count++
			return runs
		}
		break
	}
	if len(runs) == maxRuns {
		runs = append(runs[:0], runs[1:]...)
	}
	return append(runs, Run{Policy: rf.Policy, Window: rf.Window, Limit: rf.Limit, Start: rf.Start, End: rf.End, First: rf.At, Last: rf.At, Count: 1})
}

// sweep forgets the keys and runs last refused before the sketch's
// Span.
func (s *Sketch) sweep() {
	s.swept = s.now
	since := s.now - Span
	kept := s.heap[:0]
	for _, n := range s.heap {
		if n.Last < since {
			delete(s.nodes, n.Key)
			continue
		}
		n.Runs = slices.DeleteFunc(n.Runs, func(r Run) bool { return r.Last < since })
		kept = append(kept, n)
	}
	clear(s.heap[len(kept):])
	s.heap = kept
	for i, n := range s.heap {
		n.i = i
	}
	heap.Init(&s.heap)
}

// Entries returns a copy of the sketch's keys refused at or after
// now−Span, with their runs of that span.
func (s *Sketch) Entries(now int64) []Entry {
	out := make([]Entry, 0, len(s.heap))
	for _, n := range s.heap {
		if e, ok := recent(n.Entry, now); ok {
			out = append(out, e)
		}
	}
	return out
}

// Lookup returns a copy of key's entry, if it was refused at or after
// now−Span and is in the sketch.
func (s *Sketch) Lookup(key string, now int64) (Entry, bool) {
	n, ok := s.nodes[key]
	if !ok {
		return Entry{}, false
	}
	return recent(n.Entry, now)
}

// recent returns a copy of e with its runs of the Span before now, and
// whether e was refused in it.
func recent(e Entry, now int64) (Entry, bool) {
	since := now - Span
	if e.Last < since {
		return Entry{}, false
	}
	runs := make([]Run, 0, len(e.Runs))
	for _, r := range e.Runs {
		if r.Last >= since {
			runs = append(runs, r)
		}
	}
	e.Runs = runs
	return e, true
}

// entries is a min-heap of nodes by Count (container/heap).
type entries []*node

func (h entries) Len() int           { return len(h) }
func (h entries) Less(i, j int) bool { return h[i].Count < h[j].Count }
func (h entries) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *entries) Push(x any) {
	n := x.(*node)
	n.i = len(*h)
	*h = append(*h, n)
}
func (h *entries) Pop() any {
	old := *h
	n := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return n
}
