package grpclimit_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/redisstore"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// A failingLimiter cannot decide: its store is down.
type failingLimiter struct{ policy *limiter.Policy }

var errStoreDown = errors.New("dial tcp 10.1.2.3:6379: connect: connection refused")

func (f failingLimiter) Allow(context.Context, string, int64) (limiter.Decision, error) {
	return limiter.Decision{}, errStoreDown
}
func (f failingLimiter) Policy() *limiter.Policy { return f.policy }

// redisLimiter returns a limiter on a redis-server of its own, and the
// server, to kill.
func redisLimiter(t *testing.T) (*limiter.Limiter, *redistest.Server) {
	t.Helper()
	srv := redistest.StartServer(t)
	store, err := redisstore.New(redistest.Client(t, srv.Addr()), redisstore.WithPrefix("grpclimit-test:"), redisstore.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(limiter.MustPolicy("api", limiter.PerMinute(100)), limiter.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = l.Close()
		_ = store.Close()
	})
	return l, srv
}

// TestLimiterFailure: a limiter that cannot decide (a failing Limiter, a
// Redis store whose server was killed) answers UNAVAILABLE without the
// error's text, unary and streaming, and the observer is told; under
// WithFailOpen the handler runs. Nothing outlives the test (TestMain's
// leak check).
func TestLimiterFailure(t *testing.T) {
	limiters := []struct {
		name string
		make func(t *testing.T) middleware.Limiter
	}{
		{"failing_limiter", func(*testing.T) middleware.Limiter {
			return failingLimiter{limiter.MustPolicy("api", limiter.PerMinute(100))}
		}},
		{"redis_killed", func(t *testing.T) middleware.Limiter {
			l, srv := redisLimiter(t)
			if d, err := l.Allow(context.Background(), "warm", 1); err != nil || !d.Allowed {
				t.Fatalf("before the kill: %+v, %v", d, err)
			}
			srv.Kill()
			return l
		}},
	}
	for _, lt := range limiters {
		for _, failOpen := range []bool{false, true} {
			name := lt.name
			if failOpen {
				name += "/fail_open"
			}
			t.Run(name, func(t *testing.T) {
				var errorsSeen, failedOpen atomic.Int32
				opts := []grpclimit.Option{grpclimit.WithObserver(func(e middleware.Event) {
					if e.Outcome == middleware.Error && e.Err != nil {
						errorsSeen.Add(1)
						if e.FailOpen {
							failedOpen.Add(1)
						}
					}
				})}
				if failOpen {
					opts = append(opts, grpclimit.WithFailOpen())
				}
				client := serve(t, interceptors(newInterceptor(t, lt.make(t), opts...))...)
				for _, a := range []answer{check(t, client), watch(t, client)} {
					switch {
					case failOpen && (a.code != codes.OK || len(a.header.Get("x-ratelimit-limit")) != 0):
						t.Fatalf("fail-open: %v with metadata %v, want OK and none", a.st, a.header)
					case !failOpen && a.code != codes.Unavailable:
						t.Fatalf("%v, want UNAVAILABLE", a.st)
					case strings.Contains(a.st.Message(), "10.1.2.3") || strings.Contains(a.st.Message(), "127.0.0.1"):
						t.Fatalf("the answer %q carries the error's text", a.st.Message())
					}
				}
				if errorsSeen.Load() != 2 || failOpen != (failedOpen.Load() == 2) {
					t.Fatalf("the observer saw %d errors, %d failed open; want 2, fail-open %v", errorsSeen.Load(), failedOpen.Load(), failOpen)
				}
			})
		}
	}
}

// A blockingLimiter decides nothing until the call's context is done,
// then fails with its error, as a store does for a caller that left.
type blockingLimiter struct{ policy *limiter.Policy }

func (b blockingLimiter) Allow(ctx context.Context, _ string, _ int64) (limiter.Decision, error) {
	<-ctx.Done()
	return limiter.Decision{}, ctx.Err()
}
func (b blockingLimiter) Policy() *limiter.Policy { return b.policy }

// TestCallerGone: a call whose context is done before the limiter decides
// is CANCELED (DEADLINE_EXCEEDED for a deadline), and the handler does not
// run, even with WithFailOpen: admitting it uncharged would be a way past
// the limit for anyone who hangs up early.
func TestCallerGone(t *testing.T) {
	lim := blockingLimiter{limiter.MustPolicy("api", limiter.PerMinute(1))}
	ic := newInterceptor(t, lim, grpclimit.WithFailOpen(), grpclimit.WithKey(fixedKey("k")))
	for _, tt := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want codes.Code
	}{
		{"canceled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx, cancel
		}, codes.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), time.Millisecond)
		}, codes.DeadlineExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			ran := false
			_, err := ic.Unary()(ctx, nil, &grpc.UnaryServerInfo{FullMethod: checkMethod}, func(context.Context, any) (any, error) {
				ran = true
				return nil, nil
			})
			if got := status.Code(err); got != tt.want || ran {
				t.Fatalf("got %v (handler ran: %v), want %v and no handler", err, ran, tt.want)
			}
		})
	}
}

// fixedKey keys every call by key.
func fixedKey(key string) grpclimit.KeyFunc {
	return func(context.Context, string) (string, error) { return key, nil }
}
