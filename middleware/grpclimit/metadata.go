package grpclimit

import (
	"net/http"
	"time"

	"github.com/fixedwindow/ratelimit/headers"
	"github.com/fixedwindow/ratelimit/limiter"
)

// names returns the lower-case names w may write.
func names(w *headers.Writer) []string {
	n := w.Names()
	return []string{n.Limit, n.Remaining, n.Reset, n.RetryAfter, n.RateLimit, n.RateLimitPolicy}
}

// writesOnAllow reports whether w writes any field on an admission: a
// Writer without the legacy fields and without the draft's writes none,
// and the interceptor then makes no metadata at all for admitted calls.
func writesOnAllow(w *headers.Writer) bool {
	d := limiter.Decision{Allowed: true, Limit: 1, Remaining: 1, Window: time.Second, ResetAt: time.Unix(1, 0)}
	d = limiter.Dated(d, time.Unix(0, 0))
	h := http.Header{}
	w.Write(h, &d)
	return len(h) > 0
}
