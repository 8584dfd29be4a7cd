package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"
)

// The page's live updates.
const (
	// every is how often an open page is sent its key's usage: often
	// enough to watch a window fill and reset.
	every = time.Second
	// streamFor bounds one stream; the browser opens another (and the
	// observer hears of it) when it ends.
	streamFor = 30 * time.Minute
	// reauthorize is how often a stream asks Config.Authorize again: a
	// person whose access was revoked stops seeing the key within it.
	reauthorize = time.Minute
)

// watch answers GET events?key=K with server-sent events: K's report
// now, then every second while the page is open, each an event named
// "usage" whose data is the report's JSON. The observer hears of the
// stream once ("watch"), not of every update. Every minute the stream
// asks Config.Authorize again, and ends when it refuses or names another
// person (an event "forbidden" with the key). Each write pushes the
// connection's write deadline on, so that a server's WriteTimeout does
// not cut a stream short.
func (h *handler) watch(w http.ResponseWriter, r *http.Request, who string, may Access) {
	key, ok := h.queryKey(w, r, who, "watch")
	if !ok {
		return
	}
	if r.Method == http.MethodHead {
		// A HEAD gets the stream's headers and no stream: nothing is
		// read, and the connection is free for its next request.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		return
	}
	rc := http.NewResponseController(w)
	// The deadline set per write stays on the connection, which may
	// serve other requests after the stream: take it off at the end.
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	end := time.NewTimer(streamFor)
	defer end.Stop()
	tick := time.NewTicker(every)
	defer tick.Stop()
	again := time.NewTicker(reauthorize)
	defer again.Stop()
	rep := h.lookup(r, who, "watch", key)
	for {
		// The current token, for the page's forms: it rotates while
		// the page is open.
		rep.CSRFToken = h.tokenFor(who, may)
		b, err := json.Marshal(rep)
		if err != nil {
			return
		}
		_ = rc.SetWriteDeadline(time.Now().Add(every + readTimeout))
		if _, err := w.Write(append(append([]byte("event: usage\ndata: "), b...), "\n\n"...)); err != nil {
			return
		}
		if rc.Flush() != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-end.C:
			return
		case <-again.C:
			var now string
			if now, may = h.authorize(r); may < Look || now != who {
				h.observe(Event{At: h.clock.Now(), Who: who, Action: "forbidden", Key: key, Request: r,
					Err: errors.New("console: a stream's Config.Authorize refused it, or named another")})
				return
			}
		case <-tick.C:
		}
		rep, _ = h.read(r, key)
	}
}
