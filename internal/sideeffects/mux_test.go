package sideeffects

import (
	"net/http"
	"net/http/httptest"
	"testing"

	_ "github.com/fixedwindow/ratelimit/headers"
	_ "github.com/fixedwindow/ratelimit/keyfunc"
	_ "github.com/fixedwindow/ratelimit/limiter"
	_ "github.com/fixedwindow/ratelimit/limiter/redisstore"
	_ "github.com/fixedwindow/ratelimit/middleware"
)

// TestImportRegistersNoHandler imports the library packages (all but
// middleware/metrics and keyfunc/chikey, see allowed) and checks that none of them, nor
// anything they import, put a handler on http.DefaultServeMux.
func TestImportRegistersNoHandler(t *testing.T) {
	for _, path := range []string{"/", "/debug/pprof/", "/debug/pprof/heap", "/debug/vars", "/metrics"} {
		_, pattern := http.DefaultServeMux.Handler(httptest.NewRequest(http.MethodGet, path, nil))
		if pattern != "" {
			t.Errorf("GET %s on http.DefaultServeMux: got handler for pattern %q, want none", path, pattern)
		}
	}
}
