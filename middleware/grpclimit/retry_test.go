package grpclimit_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// retryPolicy retries the health service's calls once on
// RESOURCE_EXHAUSTED. Its backoff is far shorter than the pushback, so
// that only the pushback can explain the wait.
const retryPolicy = `{"methodConfig": [{
	"name": [{"service": "grpc.health.v1.Health"}],
	"retryPolicy": {
		"maxAttempts": 2,
		"initialBackoff": "0.001s",
		"maxBackoff": "0.001s",
		"backoffMultiplier": 1,
		"retryableStatusCodes": ["RESOURCE_EXHAUSTED"]
	}
}]}`

// TestRetryPolicyWaitsForTheBoundary: a grpc-go client with a retry policy
// for RESOURCE_EXHAUSTED, denied half a second before the boundary, is
// told to wait one second (the wait rounded up) by the pushback trailer,
// waits it, and succeeds on its first retry. The test clock crosses the
// boundary when the first attempt is denied (the observer runs on the
// server, before the answer goes out), so the retry finds a new window
// whatever the real time.
func TestRetryPolicyWaitsForTheBoundary(t *testing.T) {
	l, clk := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1)), noon30.Add(29500*time.Millisecond))
	var denied, allowed atomic.Int32
	observe := func(e middleware.Event) {
		switch e.Outcome {
		case middleware.Denied:
			denied.Add(1)
			clk.Advance(time.Second)
		case middleware.Allowed:
			allowed.Add(1)
		}
	}
	ic := newInterceptor(t, l, grpclimit.WithObserver(observe))
	conn := serveWith(t, []grpc.DialOption{grpc.WithDefaultServiceConfig(retryPolicy)}, interceptors(ic)...)
	client := healthpb.NewHealthClient(conn)
	if a := check(t, client); a.st.Err() != nil {
		t.Fatalf("first call: %v", a.st)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.Check(ctx, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("second call, with a retry: %v", err)
	}
	took := time.Since(start)
	if denied.Load() != 1 || allowed.Load() != 2 {
		t.Fatalf("the server saw %d denials and %d admissions, want 1 and 2: one retry", denied.Load(), allowed.Load())
	}
	// The pushback was 1000 ms; the backoff alone would have been 1 ms.
	if took < 900*time.Millisecond {
		t.Fatalf("the retry came %v after the call, want the pushback's 1s", took)
	}
}
