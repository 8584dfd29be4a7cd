package main

import (
	"io"
	"net/http"
	"sync"
)

// A handlerTransport answers the proxy's requests with a handler in this
// process, through no socket: the response streams through a pipe as the
// handler writes it, so that a model's tokens reach the client as they
// come, and a client that leaves stops the handler (its writes fail, its
// request's context is done).
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	pr, pw := io.Pipe()
	w := &pipeWriter{header: http.Header{}, pw: pw, ready: make(chan struct{})}
	go func() {
		defer func() {
			w.WriteHeader(http.StatusOK) // a handler that wrote nothing: an empty 200
			_ = pw.Close()
		}()
		t.h.ServeHTTP(w, req)
	}()
	select {
	case <-w.ready:
	case <-req.Context().Done():
		_ = pr.CloseWithError(req.Context().Err())
		return nil, req.Context().Err()
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.sent, Body: pr, ContentLength: -1, Request: req,
	}, nil
}

// A pipeWriter is the ResponseWriter of a handlerTransport's handler.
type pipeWriter struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	ready  chan struct{} // closed once the status and header are set
	status int
	sent   http.Header // the header as the status was written
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(code int) {
	w.once.Do(func() {
		w.status, w.sent = code, w.header.Clone()
		close(w.ready)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.pw.Write(b) // io.ErrClosedPipe once the proxy stopped reading: its client left
}

// Flush does nothing: a write reaches the reader as it is made.
func (w *pipeWriter) Flush() {}
