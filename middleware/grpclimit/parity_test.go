package grpclimit_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/middleware"
	"github.com/fixedwindow/ratelimit/middleware/grpclimit"
)

// plan returns the x-plan metadata of a call.
func plan(ctx context.Context) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if vs := md.Get("x-plan"); len(vs) == 1 {
		return vs[0]
	}
	return ""
}

// TestPlans: plans chosen per call, on unary and server-streaming calls
// over a real server. free is the policy's own limit (2 a minute), pro
// 5: a client that spent free's 2 and is moved to pro within the minute
// keeps them, and gets 3 more, not 5. A plan the lookup's map does not
// know is nil: INTERNAL, Misconfigured with middleware.ErrMisconfigured,
// never a panic.
func TestPlans(t *testing.T) {
	for _, c := range []struct {
		name string
		call func(testing.TB, healthpb.HealthClient, ...string) answer
	}{
		{"unary", check},
		{"server_streaming", watch},
	} {
		t.Run(c.name, func(t *testing.T) {
			free, _ := newLimiter(t, limiter.MustPolicy("plan", limiter.PerMinute(2)), noon30)
			plans := map[string]*limiter.Plan{"": {Name: "free"}, "pro": {Name: "pro", Limits: map[string][]int64{"plan": {5}}}}
			var (
				mu     sync.Mutex
				events []middleware.Event
			)
			ic := newInterceptor(t, free,
				grpclimit.WithObserver(func(e middleware.Event) {
					mu.Lock()
					defer mu.Unlock()
					events = append(events, e)
				}),
				grpclimit.WithPlans(func(ctx context.Context, _ string) (*limiter.Plan, string, error) {
					return plans[plan(ctx)], "", nil // nil for a plan the map does not know
				}))
			client := serve(t, interceptors(ic)...)
			for i, want := range []codes.Code{codes.OK, codes.OK, codes.ResourceExhausted} {
				if a := c.call(t, client); a.code != want {
					t.Fatalf("free call %d: %v, want %v", i+1, a.st, want)
				}
			}
			for i, want := range []codes.Code{codes.OK, codes.OK, codes.OK, codes.ResourceExhausted} {
				a := c.call(t, client, "x-plan", "pro")
				if a.code != want {
					t.Fatalf("pro call %d: %v, want %v", i+1, a.st, want)
				}
				if a.code == codes.OK && one(t, a.header, "x-ratelimit-limit") != "5" {
					t.Fatalf("pro call %d: limit %v, want 5", i+1, a.header)
				}
			}
			mu.Lock()
			events = nil
			mu.Unlock()
			a := c.call(t, client, "x-plan", "enterprise")
			if a.code != codes.Internal || strings.Contains(a.st.Message(), "nil") {
				t.Fatalf("an unknown plan: %v, want INTERNAL saying nothing of the server", a.st)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(events) != 1 || events[0].Outcome != middleware.Misconfigured || !errors.Is(events[0].Err, middleware.ErrMisconfigured) {
				t.Fatalf("events %+v, want one Misconfigured wrapping ErrMisconfigured", events)
			}
		})
	}
}

// holding returns a unary interceptor that holds every call in the
// handler until release is closed, counting the calls inside at once.
func holding(release <-chan struct{}, inside, most *atomic.Int64, entered chan<- struct{}) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		n := inside.Add(1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		entered <- struct{}{}
		<-release
		inside.Add(-1)
		return h(ctx, req)
	}
}

// TestInFlightExactUnary: 64 unary calls at once under a cap of 8: exactly
// 8 run, 56 are RESOURCE_EXHAUSTED with the cap's wait, and every slot
// goes back when the calls return.
func TestInFlightExactUnary(t *testing.T) {
	const capacity, calls = 8, 64
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1000)), noon30)
	f := limiter.MustInFlight("exports", capacity)
	t.Cleanup(func() { f.Close() })
	ic := newInterceptor(t, l, grpclimit.WithInFlight(f, nil))
	release := make(chan struct{})
	entered := make(chan struct{}, calls)
	var inside, most atomic.Int64
	client := serve(t, grpc.ChainUnaryInterceptor(ic.Unary(), holding(release, &inside, &most, entered)))
	codesSeen := make(chan codes.Code, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() { codesSeen <- check(t, client).code })
	}
	for range capacity {
		<-entered
	}
	// Every call is answered or inside: the refused ones come back at once.
	deadline := time.Now().Add(10 * time.Second)
	for len(codesSeen) < calls-capacity && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if u, err := f.Usage(context.Background(), "127.0.0.1"); err != nil || u.Held != capacity {
		t.Fatalf("while 8 run: Usage %+v, %v; want %d held", u, err, capacity)
	}
	close(release)
	wg.Wait()
	close(codesSeen)
	counts := map[codes.Code]int{}
	for c := range codesSeen {
		counts[c]++
	}
	if counts[codes.OK] != capacity || counts[codes.ResourceExhausted] != calls-capacity || most.Load() != capacity {
		t.Fatalf("answers %v, most inside at once %d; want %d OK, %d RESOURCE_EXHAUSTED, %d at once", counts, most.Load(), capacity, calls-capacity, capacity)
	}
	if u, _ := f.Usage(context.Background(), "127.0.0.1"); u.Held != 0 {
		t.Fatalf("after the calls: %d slots held, want 0", u.Held)
	}
	// The refusals were refunded to the rate: 8 charged of 1000.
	if d, _ := l.Peek(context.Background(), "127.0.0.1", 1); d.Remaining != 1000-capacity-1 {
		t.Fatalf("rate after the calls: %d remaining, want %d: a refused call charged the rate", d.Remaining, 1000-capacity-1)
	}
}

// TestInFlightExactStreams: 64 server streams at once under a cap of 8:
// exactly 8 receive their first message, 56 are RESOURCE_EXHAUSTED; a
// client that cancels its stream gives its slot back (the handler returns),
// and a new stream takes it.
func TestInFlightExactStreams(t *testing.T) {
	const capacity, calls = 8, 64
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1000)), noon30)
	f := limiter.MustInFlight("watchers", capacity)
	t.Cleanup(func() { f.Close() })
	var released atomic.Int64
	ic := newInterceptor(t, l, grpclimit.WithInFlight(f, nil), grpclimit.WithObserver(func(e middleware.Event) {
		if e.Outcome == middleware.Released {
			released.Add(1)
		}
	}))
	client := serve(t, interceptors(ic)...)
	type opened struct {
		cancel context.CancelFunc
		code   codes.Code
	}
	results := make(chan opened, calls)
	for range calls {
		go func() {
			ctx, cancel := context.WithCancel(context.Background())
			s, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
			if err == nil {
				_, err = s.Recv()
			}
			results <- opened{cancel, status.Code(err)}
		}()
	}
	var live []context.CancelFunc
	refused := 0
	for range calls {
		r := <-results
		switch r.code {
		case codes.OK:
			live = append(live, r.cancel)
		case codes.ResourceExhausted:
			refused++
			r.cancel()
		default:
			t.Fatalf("a stream answered %v", r.code)
		}
	}
	t.Cleanup(func() {
		for _, c := range live {
			c()
		}
	})
	if len(live) != capacity || refused != calls-capacity {
		t.Fatalf("%d streams running, %d refused; want %d and %d", len(live), refused, capacity, calls-capacity)
	}
	usage := func() int64 {
		u, err := f.Usage(context.Background(), "127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return u.Held
	}
	if n := usage(); n != capacity {
		t.Fatalf("%d slots held, want %d", n, capacity)
	}
	for _, c := range live[:3] {
		c()
	}
	deadline := time.Now().Add(10 * time.Second)
	for usage() != capacity-3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := usage(); n != capacity-3 || released.Load() != 3 {
		t.Fatalf("after 3 clients cancelled: %d held, %d released; want %d, 3 (each once)", n, released.Load(), capacity-3)
	}
	for i := range 4 {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		s, err := client.Watch(ctx, &healthpb.HealthCheckRequest{})
		if err == nil {
			_, err = s.Recv()
		}
		if want := codes.OK; i == 3 {
			want = codes.ResourceExhausted
			if status.Code(err) != want {
				t.Fatalf("a fourth new stream: %v, want %v", err, want)
			}
		} else if status.Code(err) != want {
			t.Fatalf("new stream %d: %v, want %v", i+1, err, want)
		}
	}
}

// TestNewInFlightAlone: a cap on its own, no rate: NewInFlight admits its
// max at once, refuses the next, and chained under an interceptor of
// rates charges those rates once.
func TestNewInFlightAlone(t *testing.T) {
	l, _ := newLimiter(t, limiter.MustPolicy("api", limiter.PerMinute(1000)), noon30)
	f := limiter.MustInFlight("alone", 1)
	t.Cleanup(func() { f.Close() })
	capOnly := grpclimit.MustInFlight(f)
	rates := newInterceptor(t, l)
	release := make(chan struct{})
	entered := make(chan struct{}, 4)
	var inside, most atomic.Int64
	client := serve(t, grpc.ChainUnaryInterceptor(rates.Unary(), capOnly.Unary(), holding(release, &inside, &most, entered)))
	first := make(chan codes.Code, 1)
	go func() { first <- check(t, client).code }()
	<-entered
	if a := check(t, client); a.code != codes.ResourceExhausted {
		t.Fatalf("a second call at once under a cap of 1: %v", a.st)
	}
	close(release)
	if c := <-first; c != codes.OK {
		t.Fatalf("the first call: %v", c)
	}
	if d, _ := l.Peek(context.Background(), "127.0.0.1", 1); d.Remaining != 1000-2-1 {
		t.Fatalf("the chain's rate: %d remaining, want %d: each call charged once", d.Remaining, 1000-3)
	}
	for _, opt := range []grpclimit.Option{
		grpclimit.WithLimiter(l, grpclimit.PeerHost()),
		grpclimit.WithCost(func(context.Context, string) int64 { return 2 }),
		grpclimit.WithMethods(map[string]middleware.Limiter{"/grpc.health.v1.Health/Check": l}),
	} {
		if _, err := grpclimit.NewInFlight(f, opt); !errors.Is(err, grpclimit.ErrInvalidOption) {
			t.Errorf("NewInFlight with an option of rates: %v, want ErrInvalidOption", err)
		}
	}
}

// TestErrorHandler: WithErrorHandler's result is what the client gets, for
// a limiter that cannot decide and a key function that fails; nil keeps
// the default. A client without a key still gets INVALID_ARGUMENT.
func TestErrorHandler(t *testing.T) {
	p := limiter.MustPolicy("api", limiter.PerMinute(10))
	down := &failing{p: p}
	var got []error
	ic := newInterceptor(t, down,
		grpclimit.WithKey(grpclimit.Must(grpclimit.Metadata("x-api-key"))),
		grpclimit.WithErrorHandler(func(_ context.Context, method string, err error) error {
			got = append(got, err)
			if strings.Contains(err.Error(), "keep default") {
				return nil
			}
			return status.Error(codes.Aborted, "limiter down for "+method)
		}))
	client := serve(t, interceptors(ic)...)
	if a := check(t, client, "x-api-key", "k"); a.code != codes.Aborted || a.st.Message() != "limiter down for "+checkMethod {
		t.Fatalf("a limiter error: %v, want the handler's ABORTED", a.st)
	}
	down.msg = "keep default"
	if a := check(t, client, "x-api-key", "k"); a.code != codes.Unavailable {
		t.Fatalf("a nil from the handler: %v, want the default UNAVAILABLE", a.st)
	}
	if a := check(t, client); a.code != codes.InvalidArgument {
		t.Fatalf("no key: %v, want INVALID_ARGUMENT", a.st)
	}
	if len(got) != 2 {
		t.Fatalf("the handler saw %d errors, want 2 (not the client's missing key): %v", len(got), got)
	}
}

// failing is a Limiter whose store is down.
type failing struct {
	p   *limiter.Policy
	msg string
}

func (f *failing) Allow(context.Context, string, int64) (limiter.Decision, error) {
	if f.msg != "" {
		return limiter.Decision{}, errors.New(f.msg)
	}
	return limiter.Decision{}, errors.New("store down")
}

func (f *failing) Policy() *limiter.Policy { return f.p }

// A plan lookup that failed takes the failure policy, UNAVAILABLE (or
// through with WithFailOpen), charged nothing; the observer sees Error
// with the lookup's error.
func TestPlanLookupFailureTakesTheFailurePolicy(t *testing.T) {
	dbDown := errors.New("plans: connection refused")
	for _, failOpen := range []bool{false, true} {
		base, _ := newLimiter(t, limiter.MustPolicy("plan", limiter.PerMinute(5)), noon30)
		var (
			mu     sync.Mutex
			events []middleware.Event
		)
		opts := []grpclimit.Option{
			grpclimit.WithObserver(func(e middleware.Event) { mu.Lock(); events = append(events, e); mu.Unlock() }),
			grpclimit.WithPlans(func(context.Context, string) (*limiter.Plan, string, error) { return nil, "", dbDown }),
		}
		want := codes.Unavailable
		if failOpen {
			opts, want = append(opts, grpclimit.WithFailOpen()), codes.OK
		}
		client := serve(t, interceptors(newInterceptor(t, base, opts...))...)
		if a := check(t, client); a.code != want || strings.Contains(a.st.Message(), "refused") {
			t.Fatalf("fail open %v: %v, want %v without the error's text", failOpen, a.st, want)
		}
		mu.Lock()
		if len(events) != 1 || events[0].Outcome != middleware.Error || !errors.Is(events[0].Err, dbDown) || events[0].Policy != base.Policy() {
			t.Fatalf("fail open %v: events %+v, want one Error with the lookup's error", failOpen, events)
		}
		mu.Unlock()
		if u, err := base.Usage(context.Background(), "127.0.0.1"); err != nil || u.Windows[0].Used != 0 {
			t.Fatalf("fail open %v: usage %+v, %v; want nothing charged", failOpen, u, err)
		}
	}
}
