package redistest

import (
	"fmt"
	"os"
	"sync"
)

// An owner is what a server's lifetime hangs on: a test (testing.TB), or
// the test binary's process for what a package shares (SharedCluster).
type owner interface {
	Helper()
	Fatalf(format string, args ...any)
	Fatal(args ...any)
	TempDir() string
	Cleanup(func())
}

// process owns what lives as long as the test binary, until stop. Its
// Fatal panics: SharedCluster reports it to each test that asks.
type process struct {
	mu       sync.Mutex
	cleanups []func()
}

func (*process) Helper() {}

func (*process) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }

func (*process) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

func (p *process) TempDir() string {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		panic(fmt.Sprintf("redistest: temp dir: %v", err))
	}
	p.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (p *process) Cleanup(f func()) {
	p.mu.Lock()
	p.cleanups = append(p.cleanups, f)
	p.mu.Unlock()
}

// stop runs the cleanups, last first.
func (p *process) stop() {
	p.mu.Lock()
	fs := p.cleanups
	p.cleanups = nil
	p.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
