package leakcheck

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// An Option makes a check ignore some goroutines.
type Option func(*config)

type config struct {
	ignore []func(goroutine) bool
	// sleep waits between two tries; tests replace it.
	sleep func(time.Duration)
}

// Tries and the longest wait between two: goleak's, so that a check
// waits for a goroutine on its way out exactly as long as before.
const (
	tries    = 20
	maxSleep = 100 * time.Millisecond
)

// IgnoreTopFunction ignores the goroutines whose innermost frame (outside
// the runtime) is in function f, named as a stack trace names it:
// "github.com/fixedwindow/ratelimit/internal/redistest.(*Proxy).pipe".
func IgnoreTopFunction(f string) Option {
	return func(c *config) {
		c.ignore = append(c.ignore, func(g goroutine) bool { return g.top() == f })
	}
}

// IgnoreAnyFunction ignores the goroutines with function f in any frame
// of their stack (not the "created by" line).
func IgnoreAnyFunction(f string) Option {
	return func(c *config) {
		c.ignore = append(c.ignore, func(g goroutine) bool { return g.has(f) })
	}
}

// IgnoreCurrent ignores the goroutines running when it is called, so that
// a check counts only the goroutines started after.
func IgnoreCurrent() Option {
	ids := map[uint64]bool{}
	for _, g := range parse(stacks(true)) {
		ids[g.id] = true
	}
	return func(c *config) {
		c.ignore = append(c.ignore, func(g goroutine) bool { return ids[g.id] })
	}
}

// Find returns an error that lists the goroutines running besides the
// caller, the runtime's, the testing package's, os/signal's and those an
// option ignores; nil if there are none. It tries again while some are
// left, 20 times in about 0.4 s, since a goroutine told to stop may not
// have returned yet.
func Find(opts ...Option) error {
	c := config{sleep: time.Sleep}
	for _, o := range opts {
		o(&c)
	}
	return c.find()
}

func (c *config) find() error {
	self := parse(stacks(false))[0].id
	var leaked []goroutine
	for i := 0; ; i++ {
		leaked = leaked[:0]
		for _, g := range parse(stacks(true)) {
			if g.id != self && !g.standard() && !c.ignored(g) {
				leaked = append(leaked, g)
			}
		}
		if len(leaked) == 0 {
			return nil
		}
		if i == tries {
			break
		}
		c.sleep(min(time.Microsecond<<i, maxSleep))
	}
	errs := make([]error, len(leaked))
	for i, g := range leaked {
		errs[i] = fmt.Errorf("leakcheck: goroutine %d [%s] still running:\n%s", g.id, g.state, g.stack)
	}
	return errors.Join(errs...)
}

func (c *config) ignored(g goroutine) bool {
	for _, f := range c.ignore {
		if f(g) {
			return true
		}
	}
	return false
}

// VerifyNone fails t (Error, not Fatal, so that it may be deferred) when
// Find finds a goroutine.
func VerifyNone(t testing.TB, opts ...Option) {
	t.Helper()
	if err := Find(opts...); err != nil {
		t.Error(err)
	}
}

// VerifyTestMain runs the tests, then, if they passed, fails the binary
// (exit code 1) when Find finds a goroutine. It does not return.
func VerifyTestMain(m *testing.M, opts ...Option) {
	os.Exit(verifyMain(m, os.Stderr.WriteString, opts...))
}

// runner is what verifyMain needs of a *testing.M.
type runner interface{ Run() int }

func verifyMain(m runner, report func(string) (int, error), opts ...Option) int {
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := Find(opts...); err != nil {
		_, _ = report(fmt.Sprintf("leakcheck: errors on successful test run: %v\n", err))
		return 1
	}
	return 0
}

// stacks returns runtime.Stack's text, of every goroutine or only the
// caller's.
func stacks(all bool) string {
	for n := 64 << 10; ; n *= 2 {
		buf := make([]byte, n)
		if k := runtime.Stack(buf, all); k < n {
			return string(buf[:k])
		}
	}
}

// A goroutine is one goroutine of a stack dump.
type goroutine struct {
	id    uint64
	state string   // "chan receive", "select, 2 minutes"
	funcs []string // innermost first, without the "created by" line
	stack string   // the whole text, for the report
}

// top is the innermost function outside the runtime: where the goroutine
// waits (runtime frames show only under GOTRACEBACK=system).
func (g goroutine) top() string {
	for _, f := range g.funcs {
		if !strings.HasPrefix(f, "runtime.") {
			return f
		}
	}
	return ""
}

func (g goroutine) has(f string) bool {
	for _, h := range g.funcs {
		if h == f {
			return true
		}
	}
	return false
}

// standard reports whether g belongs to the runtime (a goroutine of
// runtime frames only, shown under GOTRACEBACK=system), to the testing
// package (a test waiting in Run for its subtests, a parallel test
// waiting its turn, the tests' runner) or to os/signal (the loop that
// signal.Notify starts once and never stops).
func (g goroutine) standard() bool {
	top := g.top()
	switch {
	case top == "":
		return true
	case top == "os/signal.signal_recv", top == "os/signal.loop", g.has("runtime.ensureSigM"):
		return true
	case strings.HasPrefix(top, "testing."):
		return true
	}
	return false
}

// parse reads runtime.Stack's text:
//
//	goroutine 7 [chan receive]:
//	main.wait(0xc000012345)
//		/src/main.go:12 +0x25
//	created by main.main in goroutine 1
//		/src/main.go:8 +0x1d
//
// A line it does not recognise is kept in the text and otherwise passed
// over, so that a new line in a later Go's dump cannot hide a goroutine.
func parse(dump string) []goroutine {
	var gs []goroutine
	for _, block := range strings.Split(strings.TrimSpace(dump), "\n\n") {
		lines := strings.Split(block, "\n")
		id, state, ok := header(lines[0])
		if !ok {
			continue
		}
		g := goroutine{id: id, state: state, stack: block}
		for _, line := range lines[1:] {
			if strings.HasPrefix(line, "created by ") {
				break // the creator's frame, then ancestors' stacks
			}
			if line == "" || line[0] == '\t' {
				continue // a file:line
			}
			if i := strings.LastIndexByte(line, '('); i > 0 {
				g.funcs = append(g.funcs, line[:i])
			}
		}
		gs = append(gs, g)
	}
	return gs
}

// header reads "goroutine 7 [chan receive, 2 minutes]:".
func header(line string) (id uint64, state string, ok bool) {
	rest, ok := strings.CutPrefix(line, "goroutine ")
	if !ok {
		return 0, "", false
	}
	num, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return 0, "", false
	}
	if _, err := fmt.Sscan(num, &id); err != nil {
		return 0, "", false
	}
	i, j := strings.IndexByte(rest, '['), strings.LastIndexByte(rest, ']')
	if i < 0 || j < i {
		return 0, "", false
	}
	return id, rest[i+1 : j], true
}
