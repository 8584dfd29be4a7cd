package redisstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/redistest"
	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// slack is what a loaded 2-core machine under -race (shared with other
// test binaries) may add to a bounded call; it stays well below go-redis's
// own 3s read timeout and below the proxy's 1s delay, so a bound that held
// only by those would still fail.
const slack = 400 * time.Millisecond

// events records observer calls.
type events struct {
	mu   sync.Mutex
	got  []Event
	more chan struct{} // closed at the next event, for await
}

func (e *events) observe(ev Event) {
	e.mu.Lock()
	e.got = append(e.got, ev)
	if e.more != nil {
		close(e.more)
		e.more = nil
	}
	e.mu.Unlock()
}

// await waits until cond holds of the events observed so far, for at
// most within, and reports whether it held. It looks again at each event
// the store reports, never on a timer.
func (e *events) await(within time.Duration, cond func([]Event) bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		e.mu.Lock()
		if cond(e.got) {
			e.mu.Unlock()
			return true
		}
		if e.more == nil {
			e.more = make(chan struct{})
		}
		more := e.more
		e.mu.Unlock()
		select {
		case <-more:
		case <-deadline.C:
			return false
		}
	}
}

func (e *events) has(from, to Health) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.got {
		if ev.From == from && ev.To == to {
			return true
		}
	}
	return false
}

// load runs callers against l without pause until stopped, and reports
// the slowest call.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	slowest atomic.Int64
	calls   atomic.Int64
}

func startLoad(l *limiter.Limiter, callers int) *load {
	ld := &load{stop: make(chan struct{})}
	for i := range callers {
		ld.wg.Add(1)
		go func() {
			defer ld.wg.Done()
			key := fmt.Sprintf("load-%d", i)
			for {
				select {
				case <-ld.stop:
					return
				default:
				}
				start := time.Now()
				_, _ = l.Allow(context.Background(), key, 1)
				if d := int64(time.Since(start)); d > ld.slowest.Load() {
					ld.slowest.Store(d)
				}
				ld.calls.Add(1)
			}
		}()
	}
	return ld
}

func (ld *load) end() time.Duration {
	close(ld.stop)
	ld.wg.Wait()
	return time.Duration(ld.slowest.Load())
}

// TestRedisKilledAndRestarted kills Redis under load and starts it again:
// while it is away the default answers ErrUnavailable, WithFailOpen admits
// and WithFailLocal(2) limits each replica at limit/2, every call within
// the timeout;
// when it is back, the store recovers by itself and the observer has seen
// each transition.
func TestRedisKilledAndRestarted(t *testing.T) {
	const timeout = 50 * time.Millisecond
	p := limiter.MustPolicy("fault", limiter.PerHour(10))
	for _, fp := range []failMode{failClosed, failOpen, failLocal} {
		t.Run(fp.String(), func(t *testing.T) {
			srv := redistest.StartServer(t)
			c := redistest.Client(t, srv.Addr())
			var ev events
			opts := append(fp.options(2), WithTimeout(timeout),
				WithBreaker(3, 100*time.Millisecond), WithObserver(ev.observe))
			s := newStore(t, c, opts...)
			l := newLimiter(t, p, s, limitertest.New(t0))
			ctx := context.Background()
			if got := admitted(t, l, "before", 12, nil); got != 10 {
				t.Fatalf("healthy: admitted %d of 12, want 10", got)
			}
			ld := startLoad(l, 4)
			srv.Kill()

			var outage []error
			got := admitted(t, l, "during", 12, &outage)
			for _, err := range outage {
				if fp != failClosed || !errors.Is(err, ErrUnavailable) {
					t.Fatalf("policy %v, Redis down: error %v", fp, err)
				}
			}
			want := map[failMode]int{failClosed: 0, failOpen: 12, failLocal: 5}[fp]
			if got != want {
				t.Fatalf("policy %v, Redis down: admitted %d of 12, want %d", fp, got, want)
			}
			if fp == failClosed && len(outage) != 12 {
				t.Fatalf("fail closed, Redis down: %d errors, want 12", len(outage))
			}
			if worst(s.Health()) == Healthy || !ev.has(Failing, Unavailable) {
				t.Fatalf("Redis down: health %v, events %+v; want the breaker open", s.Health(), ev.got)
			}

			srv.Restart()
			// Until the breaker's open time has run out and a probe
			// reached the restarted Redis.
			before := s.Stats().Decisions
			if !await(5*time.Second, func() bool {
				_, _ = l.Allow(ctx, "probe", 1)
				return s.Stats().Decisions > before
			}) {
				t.Fatalf("no recovery within 5s: %+v, events %+v", s.Stats(), ev.got)
			}
			slowest := ld.end()
			t.Logf("%d calls under load, slowest %v", ld.calls.Load(), slowest)
			if slowest > timeout+2*slack {
				t.Fatalf("slowest call under load: %v, want ≤ %v", slowest, timeout+2*slack)
			}
			if got := admitted(t, l, "after", 12, nil); got != 10 {
				t.Fatalf("recovered: admitted %d of 12, want 10", got)
			}
			// The first failure makes the server Failing; the breaker
			// opens from there.
			for _, tr := range [][2]Health{{Healthy, Failing}, {Failing, Unavailable}, {Unavailable, Probing}, {Probing, Healthy}} {
				if !ev.has(tr[0], tr[1]) {
					t.Errorf("no %v→%v event in %+v", tr[0], tr[1], ev.got)
				}
			}
			if worst(s.Health()) != Healthy {
				t.Errorf("health after recovery: %v", s.Health())
			}
		})
	}
}

// admitted makes n sequential calls for key, each bounded in time, and
// counts admissions. Errors go to errs, or fail the test if errs is nil.
func admitted(t *testing.T, l *limiter.Limiter, key string, n int, errs *[]error) int {
	t.Helper()
	got := 0
	for range n {
		start := time.Now()
		d, err := l.Allow(context.Background(), key, 1)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Allow(%s) took %v", key, took)
		}
		switch {
		case err != nil && errs == nil:
			t.Fatalf("Allow(%s): %v", key, err)
		case err != nil:
			*errs = append(*errs, err)
		case d.Allowed:
			got++
		}
	}
	return got
}

// TestSlowRedis puts a delaying proxy between the store and Redis: the
// timeout holds whatever Redis does, the caller's context is honoured (and
// its end is not blamed on Redis), and the store recovers when Redis is
// fast again.
func TestSlowRedis(t *testing.T) {
	const timeout = 50 * time.Millisecond
	p := limiter.MustPolicy("slow", limiter.PerHour(1000))
	for _, mode := range []path{pathBatch, pathPlain} {
		for _, fp := range []failMode{failClosed, failOpen} {
			t.Run(mode.String()+"/"+fp.String(), func(t *testing.T) {
				proxy := redistest.StartProxy(t, redistest.SharedAddr)
				c := redistest.Client(t, proxy.Addr())
				s := newStore(t, c, append(fp.options(1), withPath(mode), WithTimeout(timeout),
					WithBreaker(100, 50*time.Millisecond))...)
				l := newLimiter(t, p, s, limitertest.New(t0))
				ctx := context.Background()
				if d, err := l.Allow(ctx, "k", 1); err != nil || !d.Allowed {
					t.Fatalf("fast: %+v, %v", d, err)
				}
				proxy.SetDelay(time.Second)
				for i := range 3 {
					start := time.Now()
					d, err := l.Allow(ctx, "k", 1)
					took := time.Since(start)
					if took > timeout+slack {
						t.Fatalf("call %d took %v, want ≤ %v", i, took, timeout+slack)
					}
					switch fp {
					case failClosed:
						if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
							t.Fatalf("call %d: got %v, want ErrUnavailable and DeadlineExceeded", i, err)
						}
					case failOpen:
						if err != nil || !d.Allowed {
							t.Fatalf("call %d: got %+v, %v; want admitted", i, d, err)
						}
					}
				}

				// A caller that gives up first gets its own context's error.
				short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
				failures := s.Stats().Failures
				start := time.Now()
				_, err := l.Allow(short, "k", 1)
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
					t.Fatalf("short caller context: got %v, want its DeadlineExceeded alone", err)
				}
				if took := time.Since(start); took > 10*time.Millisecond+slack {
					t.Fatalf("short caller context: took %v", took)
				}
				if s.Stats().Failures != failures {
					t.Fatalf("caller's own deadline counted as a Redis failure")
				}

				proxy.SetDelay(0)
				// Until the breaker's open time has run out and a call
				// was decided by Redis again.
				if !await(5*time.Second, func() bool {
					before := s.Stats().Decisions
					_, err = l.Allow(ctx, "k", 1)
					return err == nil && s.Stats().Decisions > before
				}) {
					t.Fatalf("no recovery within 5s: %v", err)
				}
			})
		}
	}
}

// TestScriptFlushMidRun flushes Redis's script cache again and again while
// replicas decide: EVALSHA's NOSCRIPT falls back to EVAL, no call fails,
// and exactly the limit is admitted.
func TestScriptFlushMidRun(t *testing.T) {
	const limit, calls = 300, 1000
	srv := redistest.StartServer(t)
	admin := redistest.Client(t, srv.Addr())
	p := limiter.MustPolicy("flush", limiter.PerHour(limit))
	prefix := testPrefix(t)
	clk := limitertest.New(t0)
	var ls []*limiter.Limiter
	for _, mode := range []path{pathBatch, pathPlain} {
		s, err := New(redistest.Client(t, srv.Addr()), WithPrefix(prefix), withPath(mode), WithTimeout(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ls = append(ls, newLimiter(t, p, s, clk))
	}
	stop := make(chan struct{})
	var flushes atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			// SCRIPT FLUSH's own round trip paces the flushes.
			if admin.ScriptFlush(context.Background()).Err() == nil {
				flushes.Add(1)
			}
		}
	}()
	got := fire(t, ls, "k", calls)
	close(stop)
	<-done
	if got != limit {
		t.Fatalf("admitted %d of %d, want exactly %d", got, calls, limit)
	}
	if flushes.Load() == 0 || commandCalls(t, admin, "eval") == 0 {
		t.Fatalf("flushes %d, EVAL calls %d: the fallback was not exercised", flushes.Load(), commandCalls(t, admin, "eval"))
	}
}
