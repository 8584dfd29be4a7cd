package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
	"github.com/fixedwindow/ratelimit/middleware"
)

// limitedServer serves "ok" behind the module's real middleware and
// limiter, limit per minute per client host, on a clock that never moves:
// the test cannot straddle a window boundary however slow the machine.
func limitedServer(t *testing.T, limit int64) *httptest.Server {
	t.Helper()
	clock := limitertest.New(time.Date(2026, 1, 1, 12, 0, 30, 0, time.UTC))
	l, err := limiter.New(limiter.MustPolicy("hammer-test", limiter.PerMinute(limit)), limiter.WithClock(clock))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	mw, err := middleware.New(l)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})))
	t.Cleanup(srv.Close)
	return srv
}

var summaryLine = regexp.MustCompile(`^40 requests in \d+\.\d\ds$`)

// Against a limit of 5, forty requests eight at a time show exactly five
// 200s, as the hammer run in docs/lab.md does.
func TestHammerShowsTheLimit(t *testing.T) {
	srv := limitedServer(t, 5)
	code, out, stderr := runLab(t, "hammer", "--url", srv.URL+"/api/fixed-window", "-n", "40", "-c", "8")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if code != 0 || stderr != "" || len(lines) != 3 || lines[0] != "200  x5" || lines[1] != "429  x35" || !summaryLine.MatchString(lines[2]) {
		t.Errorf("hammer: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and 200  x5, 429  x35, 40 requests in N.NNs", code, stderr, out)
	}
}

// The summary's shape, with a clock that says how long the run took.
func TestHammerSummaryFormat(t *testing.T) {
	srv := limitedServer(t, 5)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var calls atomic.Int32
	cfg := hammerConfig{url: srv.URL, n: 40, c: 8, timeout: 5 * time.Second, now: func() time.Time {
		if calls.Add(1) == 1 {
			return start
		}
		return start.Add(594 * time.Millisecond)
	}}
	res, err := hammer(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	res.write(&buf)
	if want := "200  x5\n429  x35\n40 requests in 0.59s\n"; buf.String() != want {
		t.Errorf("hammer summary:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestHammerErrors(t *testing.T) {
	// A port that was just free: connecting to it is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()

	tests := []struct {
		name string
		args []string
		code int
		msg  string // the whole of stderr
	}{
		{"refused", []string{"--url", "http://" + closed + "/api/fixed-window"}, 1, "lab hammer: " + closed + ": connection refused (is \"lab serve\" running?)\n"},
		{"not_http", []string{"--url", "ftp://127.0.0.1/"}, 2, "lab hammer: --url ftp://127.0.0.1/: not an http:// or https:// URL; e.g. --url http://127.0.0.1:8080/api/fixed-window\n"},
		{"no_scheme", []string{"--url", "127.0.0.1:8080"}, 2, "lab hammer: --url 127.0.0.1:8080: not a URL; e.g. --url http://127.0.0.1:8080/api/fixed-window\n"},
		{"no_host", []string{"--url", "http:///api"}, 2, "lab hammer: --url http:///api: no host; e.g. --url http://127.0.0.1:8080/api/fixed-window\n"},
		{"not_a_url", []string{"--url", "http://[::1"}, 2, "lab hammer: --url http://[::1: not a URL; e.g. --url http://127.0.0.1:8080/api/fixed-window\n"},
		{"n_zero", []string{"-n", "0"}, 2, "lab hammer: -n 0: must be from 1 to 100000; e.g. -n 40\n"},
		{"n_absurd", []string{"-n", "100000000"}, 2, "lab hammer: -n 100000000: must be from 1 to 100000; e.g. -n 40\n"},
		{"c_zero", []string{"-c", "0"}, 2, "lab hammer: -c 0: must be from 1 to 256; e.g. -c 8\n"},
		{"c_absurd", []string{"-c", "10000"}, 2, "lab hammer: -c 10000: must be from 1 to 256; e.g. -c 8\n"},
		{"timeout_zero", []string{"--timeout", "0s"}, 2, "lab hammer: --timeout 0s: must be more than 0; e.g. --timeout 10s\n"},
		{"unknown_flag", []string{"--rate", "5"}, 2, "lab hammer: --rate: no such flag; the flags are --c, --n, --timeout, --url\n"},
		{"stray_argument", []string{"http://127.0.0.1/"}, 2, "lab hammer: unexpected argument \"http://127.0.0.1/\"; lab hammer takes flags only (lab hammer -h)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, stderr := runLab(t, append([]string{"hammer"}, tt.args...)...)
			if code != tt.code || stderr != tt.msg || out != "" {
				t.Errorf("hammer %q: exit %d, stdout %q, stderr %q; want exit %d, stderr %q", tt.args, code, out, stderr, tt.code, tt.msg)
			}
		})
	}
}

// A server that accepts but never answers ends the run with one line, not
// a hang.
func TestHammerTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { <-release }))
	defer srv.Close()
	defer close(release)
	code, out, stderr := runLab(t, "hammer", "--url", srv.URL, "-n", "3", "--timeout", "50ms")
	want := "lab hammer: " + srv.URL + ": no answer in time (--timeout)\n"
	if code != 1 || stderr != want || out != "" {
		t.Errorf("hammer of a silent server: exit %d, stdout %q, stderr %q; want 1, %q", code, out, stderr, want)
	}
}

// Ctrl-C before the run ends prints what was counted and exits 1.
func TestHammerInterrupted(t *testing.T) {
	srv := limitedServer(t, 5)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"hammer", "--url", srv.URL, "-n", "40"}, &out, &errOut)
	if code != 1 || errOut.String() != "lab hammer: interrupted after 0 of 40 requests\n" || !strings.HasPrefix(out.String(), "0 requests in ") {
		t.Errorf("hammer with a cancelled context: exit %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestHammerHelp(t *testing.T) {
	code, _, stderr := runLab(t, "hammer", "-h")
	if code != 0 || !strings.Contains(stderr, "usage: lab hammer") || !strings.Contains(stderr, "-url") {
		t.Errorf("hammer -h: exit %d, stderr %q", code, stderr)
	}
}

// The progress line stays away for a short run, then redraws itself in
// place and is erased at the end. Time is synctest's, so nothing sleeps.
func TestHammerProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf progressBuffer
		var done atomic.Int64
		p := newProgress(&buf, defaultProgress, 100, &done)
		done.Store(7)
		time.Sleep(900 * time.Millisecond)
		synctest.Wait()
		if buf.String() != "" {
			t.Fatalf("progress after 0.9s: %q, want nothing yet", buf.String())
		}
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		done.Store(42)
		time.Sleep(250 * time.Millisecond)
		synctest.Wait()
		p.stop()
		want := "\r  7/100 requests\r  42/100 requests\r" + strings.Repeat(" ", len("  42/100 requests")) + "\r"
		if buf.String() != want {
			t.Errorf("progress output %q, want %q", buf.String(), want)
		}
	})
}

// A short run to a buffer draws no progress line: runHammer shows one only
// on a terminal.
func TestHammerNoProgressOffTerminal(t *testing.T) {
	if isTerminal(&bytes.Buffer{}) {
		t.Fatal("a bytes.Buffer counted as a terminal")
	}
}

// progressBuffer is a bytes.Buffer safe for the progress goroutine and
// the test.
type progressBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *progressBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *progressBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
