package leakcheck

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain checks this package's own tests with the package: each test
// below stops what it starts.
func TestMain(m *testing.M) { VerifyTestMain(m) }

// blockedIn starts a goroutine that waits in parkHere (called from
// parkOuter) until the returned stop is called; stop waits until it has
// returned.
func blockedIn(t *testing.T) (stop func()) {
	t.Helper()
	release, done, started := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		parkOuter(started, release)
	}()
	<-started
	var stopped bool
	stop = func() {
		if !stopped {
			stopped = true
			close(release)
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

//go:noinline
func parkOuter(started, release chan struct{}) { parkHere(started, release) }

//go:noinline
func parkHere(started, release chan struct{}) {
	close(started)
	<-release
}

const (
	outer = "github.com/fixedwindow/ratelimit/internal/leakcheck.parkOuter"
	inner = "github.com/fixedwindow/ratelimit/internal/leakcheck.parkHere"
)

// noWait makes a check try once: tries that cannot change the answer
// would only make a failing row slow.
func noWait() Option {
	return func(c *config) { c.sleep = func(time.Duration) {} }
}

func TestFindReportsALeakedGoroutine(t *testing.T) {
	stop := blockedIn(t)
	err := Find(noWait())
	if err == nil {
		t.Fatal("Find with a goroutine blocked in parkHere: nil, want an error")
	}
	for _, want := range []string{"leakcheck: goroutine ", "[chan receive", inner, outer} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Find: %v; want it to contain %q", err, want)
		}
	}
	stop()
	if err := Find(); err != nil {
		t.Fatalf("Find once the goroutine returned: %v, want nil", err)
	}
}

// TestFindWaitsForAGoroutineOnItsWayOut: a goroutine that returns while
// Find waits between two tries is no leak. The wait is the test's: it
// lets the goroutine go on the first wait, and counts the waits.
func TestFindWaitsForAGoroutineOnItsWayOut(t *testing.T) {
	stop := blockedIn(t)
	var waits []time.Duration
	c := config{sleep: func(d time.Duration) {
		waits = append(waits, d)
		stop()
	}}
	if err := c.find(); err != nil {
		t.Fatalf("find: %v, want nil once the goroutine returned", err)
	}
	if len(waits) != 1 || waits[0] != time.Microsecond {
		t.Fatalf("waits %v, want one of 1µs", waits)
	}
}

// TestFindGivesUpAfterItsTries: a goroutine that never returns is
// reported after 20 waits, doubling from 1 µs to at most 100 ms.
func TestFindGivesUpAfterItsTries(t *testing.T) {
	blockedIn(t)
	var waits []time.Duration
	c := config{sleep: func(d time.Duration) { waits = append(waits, d) }}
	if err := c.find(); err == nil {
		t.Fatal("find: nil, want the blocked goroutine")
	}
	if len(waits) != tries {
		t.Fatalf("%d waits, want %d", len(waits), tries)
	}
	var total time.Duration
	for i, d := range waits {
		if want := min(time.Microsecond<<i, maxSleep); d != want {
			t.Errorf("wait %d: %v, want %v", i, d, want)
		}
		total += d
	}
	if total < 400*time.Millisecond || total > 450*time.Millisecond {
		t.Errorf("waits add up to %v, want about 0.4 s as the package doc says", total)
	}
}

func TestOptionsIgnore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opt     func() Option
		ignored bool
	}{
		{"top_function_where_it_waits", func() Option { return IgnoreTopFunction(inner) }, true},
		{"top_function_of_a_caller_is_not_top", func() Option { return IgnoreTopFunction(outer) }, false},
		{"any_function_of_a_caller", func() Option { return IgnoreAnyFunction(outer) }, true},
		{"any_function_not_on_the_stack", func() Option { return IgnoreAnyFunction("main.elsewhere") }, false},
		{"current_taken_after_it_started", IgnoreCurrent, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blockedIn(t)
			err := Find(tc.opt(), noWait())
			if tc.ignored && err != nil {
				t.Fatalf("Find: %v, want the goroutine ignored", err)
			}
			if !tc.ignored && err == nil {
				t.Fatal("Find: nil, want the goroutine reported")
			}
		})
	}
}

// TestIgnoreCurrentCountsLaterGoroutines: IgnoreCurrent ignores what ran
// when it was called, not what starts after.
func TestIgnoreCurrentCountsLaterGoroutines(t *testing.T) {
	before := IgnoreCurrent()
	blockedIn(t)
	if err := Find(before, noWait()); err == nil {
		t.Fatal("Find(IgnoreCurrent taken before the goroutine started): nil, want it reported")
	}
}

// TestFindIgnoresTheStandardGoroutines: this test runs as a subtest (its
// parent waits in t.Run), beside parallel tests waiting for it to end,
// after signal.Notify started os/signal's loop: none of those goroutines
// is a leak.
func TestFindIgnoresTheStandardGoroutines(t *testing.T) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGUSR1)
	defer signal.Stop(c)
	for _, name := range []string{"a", "b"} {
		t.Run("parallel_"+name, func(t *testing.T) {
			t.Parallel() // waits here until the serial subtest has run
		})
	}
	t.Run("serial", func(t *testing.T) {
		if err := Find(noWait()); err != nil {
			t.Fatalf("Find in a subtest, parallel tests waiting: %v, want nil", err)
		}
	})
}

// fakeM is a testing.M whose tests leave a goroutine, or not, and pass or
// fail.
type fakeM struct {
	t    *testing.T
	code int
	leak bool
}

func (m fakeM) Run() int {
	if m.leak {
		blockedIn(m.t)
	}
	return m.code
}

func TestVerifyMain(t *testing.T) {
	for _, tc := range []struct {
		name       string
		m          fakeM
		want       int
		wantReport bool
	}{
		{"passed_clean", fakeM{}, 0, false},
		{"passed_leaking", fakeM{leak: true}, 1, true},
		{"failed_leaking_keeps_its_code", fakeM{code: 2, leak: true}, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.m.t = t
			var report strings.Builder
			if got := verifyMain(tc.m, report.WriteString, noWait()); got != tc.want {
				t.Fatalf("exit code %d, want %d", got, tc.want)
			}
			if got := report.String(); (got != "") != tc.wantReport || tc.wantReport && !strings.Contains(got, inner) {
				t.Fatalf("report %q, want one naming %s: %v", got, inner, tc.wantReport)
			}
		})
	}
}

// recorder is a testing.TB that keeps what VerifyNone reports.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }

func TestVerifyNone(t *testing.T) {
	r := &recorder{TB: t}
	VerifyNone(r, noWait())
	if len(r.errs) != 0 {
		t.Fatalf("VerifyNone with nothing running: %q", r.errs)
	}
	blockedIn(t)
	VerifyNone(r, noWait())
	if len(r.errs) != 1 {
		t.Fatalf("VerifyNone with a blocked goroutine: %d errors, want 1", len(r.errs))
	}
}

func TestParse(t *testing.T) {
	const dump = `goroutine 7 [chan receive, 2 minutes]:
example.com/p.(*T).wait(0xc000012345, {0x1, 0x2})
	/src/p/t.go:12 +0x25
example.com/p.run(...)
	/src/p/t.go:20
created by example.com/p.Start in goroutine 1
	/src/p/t.go:8 +0x1d

goroutine 12 [select]:
runtime.gopark(0x0?)
	/go/src/runtime/proc.go:435 +0xce
runtime.bgsweep(0x0?)
	/go/src/runtime/mgcsweep.go:317 +0xdf
created by runtime.gcenable in goroutine 1
	/go/src/runtime/mgc.go:204 +0x66

not a goroutine
`
	gs := parse(dump)
	if len(gs) != 2 {
		t.Fatalf("parsed %d goroutines, want 2: %+v", len(gs), gs)
	}
	g := gs[0]
	if g.id != 7 || g.state != "chan receive, 2 minutes" || g.top() != "example.com/p.(*T).wait" ||
		!g.has("example.com/p.run") || g.has("example.com/p.Start") || g.standard() {
		t.Errorf("first goroutine %+v: want id 7, its state, wait on top, run on the stack, not its creator, not standard", g)
	}
	if rt := gs[1]; rt.id != 12 || rt.top() != "" || !rt.standard() {
		t.Errorf("runtime goroutine %+v: want id 12, no top outside the runtime, standard", rt)
	}
}
