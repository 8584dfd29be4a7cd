package middleware_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
)

// Over a real loopback listener, within one window: 10 of 15 calls pass,
// the other 5 get 429 with headers pointing at the window's end.
func TestEndToEndFifteenCalls(t *testing.T) {
	clk := newFakeClock(t0.Add(10 * time.Second))
	l := newLimiter(t, clk, "e2e", limiter.PerMinute(10))
	srv := httptest.NewServer(newMiddleware(t, l)(&okHandler{}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	reset := unix(t0.Add(time.Minute))
	var ok, limited int
	for i := range 15 {
		res, err := get(ctx, srv.Client(), srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		wantRemain, wantRetry := "0", "50"
		switch res.StatusCode {
		case http.StatusOK:
			ok++
			wantRemain, wantRetry = strconv.Itoa(10-ok), ""
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Fatalf("call %d: status %d", i+1, res.StatusCode)
		}
		for name, want := range map[string]string{
			"X-RateLimit-Limit": "10", "X-RateLimit-Remaining": wantRemain,
			"X-RateLimit-Reset": reset, "Retry-After": wantRetry,
		} {
			if got := res.Header.Get(name); got != want {
				t.Errorf("call %d (%d): %s = %q, want %q", i+1, res.StatusCode, name, got, want)
			}
		}
	}
	if ok != 10 || limited != 5 {
		t.Fatalf("%d passed and %d limited, want 10 and 5", ok, limited)
	}
}

// 200 concurrent calls over loopback against a limit of 50: exactly 50 pass.
func TestEndToEndConcurrentAdmitsExactlyTheLimit(t *testing.T) {
	const calls, limit = 200, 50
	clk := newFakeClock(t0.Add(10 * time.Second))
	l := newLimiter(t, clk, "e2e-concurrent", limiter.PerMinute(limit))
	next := &okHandler{}
	srv := httptest.NewServer(newMiddleware(t, l)(next))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		counts = map[int]int{}
		wg     sync.WaitGroup
	)
	start := make(chan struct{})
	for range calls {
		wg.Go(func() {
			<-start
			res, err := get(ctx, srv.Client(), srv.URL)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			counts[res.StatusCode]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	if counts[http.StatusOK] != limit || counts[http.StatusTooManyRequests] != calls-limit {
		t.Fatalf("statuses = %v, want %d × 200 and %d × 429", counts, limit, calls-limit)
	}
	if got := next.count(); got != limit {
		t.Fatalf("handler ran %d times, want %d", got, limit)
	}
}

// get sends one GET and reads the whole response.
func get(ctx context.Context, c *http.Client, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		return nil, err
	}
	return res, nil
}
