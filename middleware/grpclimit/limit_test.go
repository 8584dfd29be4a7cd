package grpclimit_test

import (
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// TestLimitPerWindowPerKey drives unary and server-streaming calls through
// a real server on a loopback port, two clients told apart by their API
// key, on a fake clock: each client is admitted exactly L calls per
// window, every admission carrying the x-ratelimit-* header metadata; the
// L+1th is RESOURCE_EXHAUSTED with RetryInfo, QuotaFailure and, in a
// trailers-only answer, the rate-limit metadata and the pushback, all with
// the wait to the boundary; once the clock crosses it, L more.
func TestLimitPerWindowPerKey(t *testing.T) {
	const limit = 3
	calls := []struct {
		name string
		call func(testing.TB, healthpb.HealthClient, ...string) answer
	}{
		{"unary", check},
		{"server_streaming", watch},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			l, clk := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(limit)), noon30.Add(500*time.Millisecond))
			ic := newInterceptor(t, l, grpclimit.WithKey(grpclimit.Must(grpclimit.Metadata("x-api-key"))))
			client := serve(t, interceptors(ic)...)
			boundary := time.Date(2026, 7, 31, 12, 1, 0, 0, time.UTC)
			for window := range 2 {
				for _, key := range []string{"k-a", "k-b"} {
					for i := range limit {
						a := c.call(t, client, "x-api-key", key)
						if a.code != codes.OK {
							t.Fatalf("window %d, %s, call %d: %v, want OK", window, key, i+1, a.st)
						}
						if c.name == "server_streaming" && !a.received {
							t.Fatalf("window %d, %s, call %d: no message", window, key, i+1)
						}
						for name, want := range map[string]string{
							"x-ratelimit-limit":     strconv.Itoa(limit),
							"x-ratelimit-remaining": strconv.Itoa(limit - 1 - i),
							"x-ratelimit-reset":     strconv.FormatInt(boundary.Unix(), 10),
						} {
							if got := one(t, a.header, name); got != want {
								t.Fatalf("window %d, %s, call %d: %s = %q, want %q", window, key, i+1, name, got, want)
							}
						}
					}
					a := c.call(t, client, "x-api-key", key)
					if a.code != codes.ResourceExhausted {
						t.Fatalf("window %d, %s, call %d: %v, want RESOURCE_EXHAUSTED", window, key, limit+1, a.st)
					}
					wait := boundary.Sub(clk.Now())
					wantSecs := int64((wait + time.Second - 1) / time.Second)
					ri, qf := details(t, a.st)
					if got := ri.GetRetryDelay().AsDuration(); got != time.Duration(wantSecs)*time.Second {
						t.Fatalf("window %d, %s: RetryInfo delay %v, want %ds (the boundary is %v away)", window, key, got, wantSecs, wait)
					}
					if got, want := one(t, a.trailer, grpclimit.PushbackTrailer), strconv.FormatInt(wantSecs*1000, 10); got != want {
						t.Fatalf("window %d, %s: pushback %s ms, want %s", window, key, got, want)
					}
					if got := one(t, a.trailer, "retry-after"); got != strconv.FormatInt(wantSecs, 10) {
						t.Fatalf("window %d, %s: retry-after %s, want %d", window, key, got, wantSecs)
					}
					if got := one(t, a.trailer, "x-ratelimit-remaining"); got != "0" {
						t.Fatalf("window %d, %s: x-ratelimit-remaining %s in the trailer, want 0", window, key, got)
					}
					if len(a.header) != 0 {
						t.Fatalf("window %d, %s: a denial sent header metadata %v, which commits the call against a retry", window, key, a.header)
					}
					v := qf.GetViolations()
					if len(v) != 1 || v[0].GetSubject() != "policy:api" {
						t.Fatalf("window %d, %s: QuotaFailure %v, want one violation of policy:api", window, key, qf)
					}
					for _, s := range []string{a.st.Message(), v[0].GetDescription(), v[0].GetSubject()} {
						if containsKey(s, key) {
							t.Fatalf("window %d: the denial names the key %q: %q", window, key, s)
						}
					}
				}
				// Cross the boundary: the next window starts, a
				// quarter of a minute in.
				clk.Set(boundary.Add(15*time.Second + 200*time.Millisecond))
				boundary = boundary.Add(time.Minute)
			}
		})
	}
}

// containsKey reports whether s mentions key.
func containsKey(s, key string) bool {
	for i := 0; i+len(key) <= len(s); i++ {
		if s[i:i+len(key)] == key {
			return true
		}
	}
	return false
}
