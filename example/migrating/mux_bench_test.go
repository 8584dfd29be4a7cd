package migrating

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/fixedwindow/ratelimit/middleware"
)

// sink keeps the handler BenchmarkApply builds from being optimised away.
var sink http.Handler

// BenchmarkApply is what Router.Use adds to a request: applying the
// built middleware to a handler.
func BenchmarkApply(b *testing.B) {
	limit := middleware.ByIP(1<<30, time.Hour)
	b.ReportAllocs()
	for b.Loop() {
		sink = limit(ok)
	}
}

// BenchmarkMux serves admitted requests from 1,000 addresses through
// gorilla/mux, the middleware applied once to the route's handler
// (wrapped_once) or by Router.Use on every request (router_use): the
// difference is the cost of re-wrapping in a whole request.
func BenchmarkMux(b *testing.B) {
	reqs := make([]*http.Request, 1000)
	for i := range reqs {
		reqs[i] = httptest.NewRequest(http.MethodGet, "/api/items", nil)
		reqs[i].RemoteAddr = "10.0." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255) + ":1234"
	}
	for _, tc := range []struct {
		name  string
		route func(r *mux.Router, limit func(http.Handler) http.Handler)
	}{
		{"wrapped_once", func(r *mux.Router, limit func(http.Handler) http.Handler) {
			r.Handle("/api/items", limit(ok))
		}},
		{"router_use", func(r *mux.Router, limit func(http.Handler) http.Handler) {
			r.Use(limit)
			r.Handle("/api/items", ok)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			r := mux.NewRouter()
			tc.route(r, middleware.ByIP(1<<30, time.Hour))
			w := &discard{h: http.Header{}}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				clear(w.h)
				w.code = 0
				r.ServeHTTP(w, reqs[i%len(reqs)])
				if w.code != 0 && w.code != http.StatusOK {
					b.Fatalf("status %d", w.code)
				}
				i++
			}
		})
	}
}

// discard is a ResponseWriter that keeps one header map, emptied before
// every request as a server's fresh map would be.
type discard struct {
	h    http.Header
	code int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(code int)        { w.code = code }
