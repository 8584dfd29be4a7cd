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

// WriteCaps adds every cap of hc and of the doors around it to the draft
// fields w writes, the outermost first.
func WriteCaps(w *headers.Writer, h http.Header, hc *CapsList) {
	if hc.Prev != nil {
		WriteCaps(w, h, hc.Prev)
	}
	var ds [MaxCaps]limiter.Decision
	var ps [MaxCaps]*limiter.Decision
	n := hc.Caps.Len()
	for i := range n {
		ds[i] = hc.Caps[i].Decision()
		ps[i] = &ds[i]
	}
	w.WriteInFlight(h, ps[:n]...)
}
