package middleware

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/fixedwindow/ratelimit/internal/verdict"
)

// A statusRecorder is the ResponseWriter WithCountIf and WithBytes hand
// the handler: it notes the status of the response and the bytes of its
// content and passes everything on. It keeps the
// optional interfaces a server's ResponseWriter has (http.Flusher,
// http.Hijacker, io.ReaderFrom, http.Pusher) and unwraps for
// http.ResponseController, which finds the rest (deadlines, full duplex)
// on the writer it wraps.
type statusRecorder struct {
	http.ResponseWriter
	status    int32 // the final status, 0 until one is written
	hijacked  bool  // the handler took the connection: the status is unknown
	noBody    bool  // the response has no content to count: the answer to a HEAD
	described bool  // the headers were written at the first byte
	bytes     int64 // the bytes of content written (WithBytes): what the wrapped writer took
	// first is the middleware whose headers a request with metered
	// limits has written at the response's first byte (firstByte), from
	// the request's state as t, its tally, finds it; nil otherwise.
	first *config
	t     *verdict.Tally
}

// firstByte writes the rate-limit headers of a metered request, once,
// before the response's first byte goes out (or before the server sends
// the response of a handler that wrote nothing): from the request's
// state as it stands then, so that a handler that has reported its cost
// gets headers at that cost.
func (w *statusRecorder) firstByte() {
	if w.first == nil || w.described {
		return
	}
	w.described = true
	w.first.answer(w.ResponseWriter.Header(), stateFrom(w.t), w.t)
}

var (
	_ http.Flusher  = (*statusRecorder)(nil)
	_ http.Hijacker = (*statusRecorder)(nil)
	_ io.ReaderFrom = (*statusRecorder)(nil)
	_ http.Pusher   = (*statusRecorder)(nil)
)

// WriteHeader notes the first final status. 1xx informational answers
// (103 Early Hints) come before the final one and do not count; 101
// Switching Protocols is final.
func (w *statusRecorder) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.firstByte() // not on 103 Early Hints: the final answer's headers
	}
	if w.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		w.status = int32(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write notes 200 for a body written without WriteHeader, as net/http
// sends it.
func (w *statusRecorder) Write(b []byte) (int, error) {
	w.firstByte()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	if !w.noBody {
		w.bytes += int64(n)
	}
	return n, err
}

// ReadFrom keeps the wrapped writer's io.ReaderFrom (sendfile) in reach.
func (w *statusRecorder) ReadFrom(r io.Reader) (int64, error) {
	w.firstByte()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := io.Copy(w.ResponseWriter, r)
	if !w.noBody {
		w.bytes += n
	}
	return n, err
}

// Flush sends what is buffered, committing a 200 if nothing was written.
// It does nothing when the wrapped writer cannot flush.
func (w *statusRecorder) Flush() { _ = w.FlushError() }

// FlushError is Flush with the wrapped writer's error, as
// http.ResponseController calls it.
func (w *statusRecorder) FlushError() error {
	w.firstByte()
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands the connection to the handler. The response is then
// whatever the handler writes on it, unknown here: the request stays
// charged.
func (w *statusRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.firstByte()
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Push is the wrapped writer's HTTP/2 server push, or
// http.ErrNotSupported.
func (w *statusRecorder) Push(target string, opts *http.PushOptions) error {
	if p, ok := w.ResponseWriter.(http.Pusher); ok {
		return p.Push(target, opts)
	}
	return http.ErrNotSupported
}

// Unwrap returns the wrapped writer, for http.ResponseController.
func (w *statusRecorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// final returns the status the client got and whether it is known: 200
// when the handler wrote nothing, as net/http then sends; unknown after a
// hijack.
func (w *statusRecorder) final() (int, bool) {
	if w.hijacked {
		return 0, false
	}
	if w.status == 0 {
		return http.StatusOK, true
	}
	return int(w.status), true
}
