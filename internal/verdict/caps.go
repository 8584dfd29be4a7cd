package verdict

import (
	"net/http"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
)

// A CapsList is the slots a request holds through one door, linked to
// those of the doors around it (Prev), so that every door's answer lists
// every cap: the innermost door's is in the request's state.
type CapsList struct {
	Prev *CapsList
	Caps HeldCaps
}

// maxListedCaps bounds the caps one answer lists: four doors' worth.
const maxListedCaps = 4 * MaxCaps

// WriteAll writes with w the headers of an admission: best, the most
// restrictive decision of the rates, all, every decision the answer
// lists (at most MaxPolicies), and then every cap of caps and of the
// doors around it, the outermost first, at most maxListedCaps of them.
// With best nil (no rate decided) the caps are described alone, in the
// draft fields only: a cap's admission has no X-RateLimit-* fields of
// its own. It allocates nothing of its own: the decisions stay on the
// doors' stacks.
func WriteAll(w *headers.Writer, h http.Header, best *limiter.Decision, all []*limiter.Decision, caps *CapsList) {
	var (
		ds   [maxListedCaps]limiter.Decision
		list [MaxPolicies + maxListedCaps]*limiter.Decision
	)
	n := 0
	for c := caps; c != nil; c = c.Prev {
		n += c.Caps.Len()
	}
	// The innermost door's caps come last: fill from the end, and keep
	// the outermost ones past the bound.
	i := n
	for c := caps; c != nil; c = c.Prev {
		for j := c.Caps.Len() - 1; j >= 0; j-- {
			if i--; i < len(ds) {
				ds[i] = c.Caps[j].Decision()
			}
		}
	}
	k := 0
	for _, d := range all[:min(len(all), MaxPolicies)] {
		list[k] = d // not copy, which the compiler takes for a move to the heap
		k++
	}
	for i := range min(n, len(ds)) {
		list[k] = &ds[i]
		k++
	}
	if best != nil {
		w.Write(h, best, list[:k]...)
		return
	}
	if k == 0 || !w.WritesEveryDecision() {
		return // a cap's slots have no X-RateLimit-* fields of their own
	}
	w.Write(h, list[0], list[:k]...)
	names := w.Names()
	delete(h, names.Limit)
	delete(h, names.Remaining)
	delete(h, names.Reset)
}
