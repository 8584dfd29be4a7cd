package grpclimit_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

// documentedRetryPolicy is the service config docs/grpc.md recommends,
// as it stands there (TestDocumentedRetryPolicy keeps the two alike).
const documentedRetryPolicy = `{"methodConfig": [{
  "name": [{"service": "grpc.health.v1.Health"}],
  "retryPolicy": {
    "maxAttempts": 2, "initialBackoff": "0.1s", "maxBackoff": "1s",
    "backoffMultiplier": 2, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]
  }
}]}`

// TestDocumentedRetryPolicy: docs/grpc.md shows documentedRetryPolicy,
// so the tests that use it check the policy users copy.
func TestDocumentedRetryPolicy(t *testing.T) {
	doc, err := os.ReadFile("../../docs/grpc.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), documentedRetryPolicy) {
		t.Fatalf("docs/grpc.md does not show the retry policy the tests use:\n%s", documentedRetryPolicy)
	}
}

// TestRetryPolicyStopsAtALongWait (issue 32): a grpc-go client with the
// documented retry policy and a 3 s deadline, refused by a monthly limit
// 16 days before the month turns, gets RESOURCE_EXHAUSTED at once. The
// pushback asks for no retry (-1), so the client neither waits out its
// deadline on a pushback of 1424580000 ms (DEADLINE_EXCEEDED, as it did)
// nor retries after its backoff (the server sees one refusal); RetryInfo
// and retry-after still say when the month turns. With the bound raised
// past the wait, the client waits the pushback again, until its
// deadline.
func TestRetryPolicyStopsAtALongWait(t *testing.T) {
	turn := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
	at := turn.Add(-1424580 * time.Second) // the wait: 15 July, 12:17 UTC
	for _, tt := range []struct {
		name     string
		opts     []grpclimit.Option
		deadline time.Duration
		code     codes.Code
		pushback string
	}{
		{"default_bound", nil, 3 * time.Second, codes.ResourceExhausted, "-1"},
		{"bound_past_the_wait", []grpclimit.Option{grpclimit.WithMaxPushback(17 * 24 * time.Hour)}, 200 * time.Millisecond, codes.DeadlineExceeded, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, limiter.MustPolicy("plan", limiter.PerMonthIn(1, time.UTC)), at)
			var denied atomic.Int32
			observe := func(e middleware.Event) {
				if e.Outcome == middleware.Denied {
					denied.Add(1)
				}
			}
			ic := newInterceptor(t, l, append(tt.opts, grpclimit.WithObserver(observe))...)
			conn := serveWith(t, []grpc.DialOption{grpc.WithDefaultServiceConfig(documentedRetryPolicy)}, interceptors(ic)...)
			client := healthpb.NewHealthClient(conn)
			if a := check(t, client); a.st.Err() != nil {
				t.Fatalf("first call: %v", a.st)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.deadline)
			defer cancel()
			var trailer metadata.MD
			start := time.Now()
			_, err := client.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Trailer(&trailer))
			took := time.Since(start)
			st := status.Convert(err)
			t.Logf("answered %v after %v (deadline %v)", st.Code(), took, tt.deadline)
			if st.Code() != tt.code {
				t.Fatalf("second call: %v after %v, want %v", st, took, tt.code)
			}
			if denied.Load() != 1 {
				t.Fatalf("the server refused %d attempts, want 1: the client retried", denied.Load())
			}
			if tt.code == codes.DeadlineExceeded {
				if took < tt.deadline {
					t.Fatalf("DEADLINE_EXCEEDED after %v, before the deadline %v", took, tt.deadline)
				}
				return
			}
			// At once: a retry after the policy's backoff would show as a
			// second refusal above; this bounds the answer well under
			// the deadline, with room for a loaded machine.
			if took > time.Second {
				t.Fatalf("RESOURCE_EXHAUSTED after %v, want it at once (the deadline is %v)", took, tt.deadline)
			}
			secs := int64(turn.Sub(at) / time.Second)
			ri, _ := details(t, st)
			if got := ri.GetRetryDelay().AsDuration(); got != turn.Sub(at) {
				t.Fatalf("RetryInfo delay %v, want %v, until the month turns", got, turn.Sub(at))
			}
			for name, want := range map[string]string{
				grpclimit.PushbackTrailer: tt.pushback,
				"retry-after":             strconv.FormatInt(secs, 10),
				"x-ratelimit-reset":       strconv.FormatInt(turn.Unix(), 10),
				"x-ratelimit-remaining":   "0",
			} {
				if got := one(t, trailer, name); got != want {
					t.Fatalf("trailer %s = %q, want %q", name, got, want)
				}
			}
		})
	}
}

// TestPushbackBound: a refusal's wait, in whole seconds rounded up, is
// pushed back in milliseconds up to WithMaxPushback's bound (default one
// minute, so a per-minute window's longest wait is still pushed back),
// and is -1 past it; RetryInfo and retry-after say the wait either way.
func TestPushbackBound(t *testing.T) {
	for _, tt := range []struct {
		name     string
		p        *limiter.Policy
		at       time.Time
		opts     []grpclimit.Option
		wait     time.Duration
		pushback string
	}{
		{"minute_window_whole_wait", limiter.MustPolicy("api", limiter.PerMinute(1)), time.Date(2026, 7, 31, 12, 1, 0, 0, time.UTC), nil, time.Minute, "60000"},
		{"hour_window_61s_left", limiter.MustPolicy("api", limiter.PerHour(1)), time.Date(2026, 7, 31, 12, 58, 59, 0, time.UTC), nil, 61 * time.Second, "-1"},
		{"rounded_up_past_the_bound", limiter.MustPolicy("api", limiter.PerHour(1)), time.Date(2026, 7, 31, 12, 58, 59, 500_000_000, time.UTC), []grpclimit.Option{grpclimit.WithMaxPushback(60500 * time.Millisecond)}, 61 * time.Second, "-1"},
		{"hour_window_raised_bound", limiter.MustPolicy("api", limiter.PerHour(1)), time.Date(2026, 7, 31, 12, 30, 0, 0, time.UTC), []grpclimit.Option{grpclimit.WithMaxPushback(time.Hour)}, 30 * time.Minute, "1800000"},
		{"bound_under_a_second", limiter.MustPolicy("api", limiter.PerSecond(1)), noon30, []grpclimit.Option{grpclimit.WithMaxPushback(500 * time.Millisecond)}, time.Second, "-1"},
		{"day", limiter.MustPolicy("plan", limiter.PerDayIn(1, time.UTC)), noon30, nil, 12*time.Hour - 30*time.Second, "-1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, _ := newLimiter(t, tt.p, tt.at)
			client := serve(t, interceptors(newInterceptor(t, l, tt.opts...))...)
			if a := check(t, client); a.code != codes.OK {
				t.Fatalf("first call: %v", a.st)
			}
			a := check(t, client)
			if a.code != codes.ResourceExhausted {
				t.Fatalf("second call: %v, want RESOURCE_EXHAUSTED", a.st)
			}
			ri, _ := details(t, a.st)
			if got := ri.GetRetryDelay().AsDuration(); got != tt.wait {
				t.Errorf("RetryInfo delay %v, want %v", got, tt.wait)
			}
			if got := one(t, a.trailer, "retry-after"); got != strconv.FormatInt(int64(tt.wait/time.Second), 10) {
				t.Errorf("retry-after %s, want %d", got, int64(tt.wait/time.Second))
			}
			if got := one(t, a.trailer, grpclimit.PushbackTrailer); got != tt.pushback {
				t.Errorf("pushback %s, want %s", got, tt.pushback)
			}
		})
	}
}

// TestCostExceedsLimitNeverRetried: a call whose cost no window can ever
// admit is RESOURCE_EXHAUSTED with pushback -1, no RetryInfo and no
// retry-after metadata, and a message that says the cost exceeds the
// limit; a grpc-go client with a retry policy does not retry it (issue
// 36).
func TestCostExceedsLimitNeverRetried(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("tokens", limiter.PerDayIn(50_000, time.UTC)), noon30)
	var denied atomic.Int32
	ic := newInterceptor(t, l,
		grpclimit.WithCost(func(context.Context, string) int64 { return 60_000 }),
		grpclimit.WithObserver(func(e middleware.Event) {
			if e.Outcome == middleware.Denied {
				denied.Add(1)
				if !e.Decision.CostExceedsLimit || e.Decision.RetryAfter != 0 {
					t.Errorf("observer: %+v, want CostExceedsLimit and no RetryAfter", e.Decision)
				}
			}
		}))
	conn := serveWith(t, []grpc.DialOption{grpc.WithDefaultServiceConfig(retryPolicy)}, interceptors(ic)...)
	a := check(t, healthpb.NewHealthClient(conn))
	if a.code != codes.ResourceExhausted || !strings.Contains(a.st.Message(), "request cost exceeds the rate limit of 50000 per day") {
		t.Fatalf("got %v %q, want RESOURCE_EXHAUSTED saying the cost exceeds the limit", a.code, a.st.Message())
	}
	if got := a.trailer.Get(grpclimit.PushbackTrailer); len(got) != 1 || got[0] != "-1" {
		t.Fatalf("pushback %q, want -1: never retry", got)
	}
	if got := a.trailer.Get("retry-after"); len(got) != 0 {
		t.Fatalf("retry-after %q, want none", got)
	}
	for _, d := range a.st.Details() {
		if _, ok := d.(*errdetails.RetryInfo); ok {
			t.Fatalf("RetryInfo %v in the details, want none", d)
		}
	}
	if denied.Load() != 1 {
		t.Fatalf("the server saw %d calls, want 1: the client must not retry", denied.Load())
	}
}

// TestSubSecondWaitExact (issue 40): a window under a second is refused
// with its exact wait where gRPC can carry it, RetryInfo and the
// pushback in milliseconds, and in whole seconds, at least 1, where the
// metadata mirror HTTP's headers (retry-after).
func TestSubSecondWaitExact(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.Rate{Limit: 1, Window: 100 * time.Millisecond}), noon30.Add(30*time.Millisecond))
	client := serve(t, interceptors(newInterceptor(t, l))...)
	if a := check(t, client); a.code != codes.OK {
		t.Fatalf("first call: %v", a.st)
	}
	a := check(t, client)
	if a.code != codes.ResourceExhausted {
		t.Fatalf("second call: %v, want RESOURCE_EXHAUSTED", a.st)
	}
	ri, _ := details(t, a.st)
	if got := ri.GetRetryDelay().AsDuration(); got != 70*time.Millisecond {
		t.Errorf("RetryInfo delay %v, want 70ms", got)
	}
	for name, want := range map[string]string{grpclimit.PushbackTrailer: "70", "retry-after": "1"} {
		if got := one(t, a.trailer, name); got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}
