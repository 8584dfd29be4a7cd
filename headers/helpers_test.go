package headers

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// noon30 is 12:00:30 UTC, thirty seconds before a minute boundary.
var noon30 = time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)

// newLimiter returns a limiter for p on a fake clock reading at, closed
// when the test ends.
func newLimiter(t *testing.T, p *limiter.Policy, at time.Time) (*limiter.Limiter, *limitertest.Clock) {
	t.Helper()
	clk := limitertest.New(at)
	l, err := limiter.New(p, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l, clk
}

// allow takes n units one at a time and returns the last decision.
func allow(t *testing.T, l *limiter.Limiter, n int) limiter.Decision {
	t.Helper()
	var d limiter.Decision
	for range n {
		var err error
		if d, err = l.Allow(context.Background(), "k", 1); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func newWriter(t *testing.T, opts ...Option) *Writer {
	t.Helper()
	w, err := New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// writeAt is Write of d dated at, when it carries no instant of its own,
// as the middleware dates a custom Limiter's decision (limiter.Dated).
func writeAt(w *Writer, h http.Header, d *limiter.Decision, at time.Time, all ...*limiter.Decision) {
	dd := limiter.Dated(*d, at)
	w.Write(h, &dd, all...)
}

// writeDeniedAt is WriteDenied of d dated at, as writeAt writes.
func writeDeniedAt(w *Writer, rw http.ResponseWriter, r *http.Request, d *limiter.Decision, at time.Time, all ...*limiter.Decision) {
	dd := limiter.Dated(*d, at)
	w.WriteDenied(rw, r, &dd, all...)
}
