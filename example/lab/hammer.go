package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

func init() {
	register("hammer", "fire requests at a URL, count the answers by status", runHammer)
}

// Bounds of hammer's flags: the lab is a teaching tool aimed at loopback,
// not a load generator.
const (
	maxHammerRequests    = 100_000
	maxHammerConcurrency = 256
)

// hammerConfig is the settled configuration of "lab hammer".
type hammerConfig struct {
	url         string
	n, c        int
	timeout     time.Duration
	progress    io.Writer // nil: no progress line
	progressCfg progressConfig
	now         func() time.Time
}

func runHammer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseHammerFlags(args, stderr)
	if err != nil {
		return err
	}
	if isTerminal(stderr) {
		cfg.progress = stderr
	}
	res, err := hammer(ctx, cfg)
	if err != nil {
		return err
	}
	res.write(stdout)
	if res.interrupted {
		return fmt.Errorf("interrupted after %d of %d requests", res.total(), cfg.n)
	}
	return nil
}

// parseHammerFlags checks every flag before any request, so that a bad
// one ends the command at once with one line naming it (exit code 2).
func parseHammerFlags(args []string, stderr io.Writer) (hammerConfig, error) {
	cfg := hammerConfig{progressCfg: defaultProgress, now: time.Now}
	fs := flag.NewFlagSet("hammer", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.url, "url", "http://127.0.0.1:8080/api/fixed-window", "the `URL` to GET")
	fs.IntVar(&cfg.n, "n", 40, fmt.Sprintf("requests to send, 1 to %d", maxHammerRequests))
	fs.IntVar(&cfg.c, "c", 8, fmt.Sprintf("requests in flight at a time, 1 to %d", maxHammerConcurrency))
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Second, "give up on a request after this long")
	h, err := parseFlags(fs, args, stderr, map[string]string{
		"url": "http://127.0.0.1:8080/api/fixed-window", "n": "40", "c": "8", "timeout": "10s",
	},
		"Prints one line per status and a summary. A progress line goes to stderr",
		"when it is a terminal and the run lasts over a second.")
	if err != nil {
		return cfg, err
	}
	switch {
	case cfg.n < 1 || cfg.n > maxHammerRequests:
		return cfg, h.bad("n", cfg.n, fmt.Sprintf("must be from 1 to %d", maxHammerRequests))
	case cfg.c < 1 || cfg.c > maxHammerConcurrency:
		return cfg, h.bad("c", cfg.c, fmt.Sprintf("must be from 1 to %d", maxHammerConcurrency))
	case cfg.timeout <= 0:
		return cfg, h.bad("timeout", cfg.timeout, "must be more than 0")
	}
	u, err := url.Parse(cfg.url)
	switch {
	case err != nil:
		return cfg, h.bad("url", cfg.url, "not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return cfg, h.bad("url", cfg.url, "not an http:// or https:// URL")
	case u.Host == "":
		return cfg, h.bad("url", cfg.url, "no host")
	}
	return cfg, nil
}

// hammerResult counts the answers of one run.
type hammerResult struct {
	statuses    map[int]int
	elapsed     time.Duration
	interrupted bool
}

func (r hammerResult) total() int {
	n := 0
	for _, c := range r.statuses {
		n += c
	}
	return n
}

// write prints the summary docs/lab.md shows: "200  x5", one line per
// status in increasing order, then "40 requests in 0.59s".
func (r hammerResult) write(w io.Writer) {
	codes := make([]int, 0, len(r.statuses))
	for code := range r.statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	for _, code := range codes {
		fmt.Fprintf(w, "%d  x%d\n", code, r.statuses[code])
	}
	fmt.Fprintf(w, "%d requests in %.2fs\n", r.total(), r.elapsed.Seconds())
}

// hammer sends cfg.n GETs with at most cfg.c in flight. A request that
// gets no HTTP answer (refused, reset, timed out) stops the run: the
// command then reports that one error, since counting statuses of a server
// that is not answering would mislead. A cancelled ctx (Ctrl-C) stops it
// too, returning what was counted so far with interrupted set.
func hammer(ctx context.Context, cfg hammerConfig) (hammerResult, error) {
	transport := &http.Transport{
		Proxy:               nil, // the lab aims at loopback: never through a proxy
		MaxIdleConnsPerHost: cfg.c,
		MaxConnsPerHost:     cfg.c,
		DialContext:         (&net.Dialer{Timeout: cfg.timeout}).DialContext,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{
		Transport: transport,
		Timeout:   cfg.timeout,
		// Count what the server answered, not where a redirect led.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	var (
		next, done atomic.Int64
		mu         sync.Mutex
		statuses   = make(map[int]int)
		firstErr   error
		wg         sync.WaitGroup
	)
	if cfg.progress != nil {
		p := newProgress(cfg.progress, cfg.progressCfg, cfg.n, &done)
		defer p.stop()
	}
	start := cfg.now()
	for range min(cfg.c, cfg.n) {
		wg.Go(func() {
			for next.Add(1) <= int64(cfg.n) && runCtx.Err() == nil {
				code, err := get(runCtx, client, cfg.url)
				mu.Lock()
				if err != nil {
					if firstErr == nil && runCtx.Err() == nil {
						firstErr = err
						stop()
					}
				} else {
					statuses[code]++
				}
				mu.Unlock()
				done.Add(1)
			}
		})
	}
	wg.Wait()
	res := hammerResult{statuses: statuses, elapsed: cfg.now().Sub(start)}
	if firstErr != nil {
		return res, describeRequestError(cfg.url, firstErr)
	}
	res.interrupted = ctx.Err() != nil && res.total() < cfg.n
	return res, nil
}

// get sends one GET and drains the body, so that the connection is reused.
func get(ctx context.Context, client *http.Client, target string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// describeRequestError turns a transport error into one line that says
// what to do about it.
func describeRequestError(target string, err error) error {
	u, _ := url.Parse(target)
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("%s: connection refused (is \"lab serve\" running?)", u.Host)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("%s: unknown host", u.Hostname())
	case errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%s: no answer in time (--timeout)", target)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return fmt.Errorf("%s: %w", target, err)
}

// isTerminal reports whether w is a terminal, where a progress line that
// rewrites itself with \r is welcome; in a pipe or a file it would be noise.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
