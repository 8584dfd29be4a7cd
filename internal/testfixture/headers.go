package testfixture

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/limiter"
	"github.com/fixedwindow/ratelimit/limiter/limitertest"
)

// A HeaderScenario is a file of testdata/headers: a policy, requests made
// by one client at one instant, and the status and rate-limit header set
// of the last response. Its settings come first, one "name: value" per
// line ('#' starts a comment line); a blank line ends them, and the
// expected headers follow, one "Name: value" per line:
//
//	policy: api
//	rate: 3/1m
//	start: 2026-07-31T12:00:30Z
//	requests: 4
//	draft: true
//	status: 429
//
//	X-RateLimit-Limit: 3
//	Retry-After: 30
//
// A header of RateLimitHeaders missing from the list must be absent.
type HeaderScenario struct {
	Name     string
	Policy   string
	Rates    []Rate // in the file's order
	Start    time.Time
	Requests int
	Draft    bool // the IETF draft fields are enabled
	Status   int
	Headers  http.Header
}

// A Rate is Limit requests per Window.
type Rate struct {
	Limit  int64
	Window time.Duration
}

// RateLimitHeaders are the headers a scenario speaks for: each must be
// exactly as listed, or absent when not listed.
var RateLimitHeaders = []string{
	"X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset",
	"Retry-After", "Ratelimit", "Ratelimit-Policy",
}

// ReadHeaderScenario reads the scenario at path.
func ReadHeaderScenario(path string) (*HeaderScenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := &HeaderScenario{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Headers: http.Header{}}
	s := bufio.NewScanner(f)
	inHeaders := false
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" {
			inHeaders = true
			continue
		}
		if line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: %q is not \"name: value\"", path, n, line)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if inHeaders {
			sc.Headers.Add(k, v)
			continue
		}
		if err := sc.set(k, v); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	if sc.Policy == "" || len(sc.Rates) == 0 || sc.Requests < 1 || sc.Status == 0 || len(sc.Headers) == 0 {
		return nil, fmt.Errorf("%s: want policy, rate, start, requests, status and a header list", path)
	}
	return sc, nil
}

func (sc *HeaderScenario) set(k, v string) error {
	var err error
	switch k {
	case "policy":
		sc.Policy = v
	case "rate":
		n, w, ok := strings.Cut(v, "/")
		if !ok {
			return fmt.Errorf("rate %q is not limit/window", v)
		}
		var r Rate
		if r.Limit, err = strconv.ParseInt(n, 10, 64); err == nil {
			r.Window, err = time.ParseDuration(w)
		}
		sc.Rates = append(sc.Rates, r)
	case "start":
		sc.Start, err = time.Parse(time.RFC3339Nano, v)
	case "requests":
		sc.Requests, err = strconv.Atoi(v)
	case "draft":
		sc.Draft, err = strconv.ParseBool(v)
	case "status":
		sc.Status, err = strconv.Atoi(v)
	default:
		return fmt.Errorf("unknown setting %q", k)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", k, err)
	}
	return nil
}

// Check compares the status and rate-limit headers of a response with the
// scenario's and returns one line per difference.
func (sc *HeaderScenario) Check(status int, h http.Header) []string {
	var diffs []string
	if status != sc.Status {
		diffs = append(diffs, fmt.Sprintf("status: got %d, want %d", status, sc.Status))
	}
	for _, name := range RateLimitHeaders {
		got, want := h.Values(name), sc.Headers.Values(name)
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			diffs = append(diffs, fmt.Sprintf("%s: got %q, want %q", name, got, want))
		}
	}
	for name := range sc.Headers {
		if !contains(RateLimitHeaders, name) {
			diffs = append(diffs, fmt.Sprintf("%s: the scenario lists a header outside RateLimitHeaders", name))
		}
	}
	return diffs
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Limiter returns a limiter on the scenario's policy, with its rates in the
// file's order, on a settable clock that reads the scenario's start. It is
// closed when t ends.
func (sc *HeaderScenario) Limiter(t testing.TB) *limiter.Limiter {
	t.Helper()
	rates := make([]limiter.Rate, 0, len(sc.Rates))
	for _, r := range sc.Rates {
		rates = append(rates, limiter.Rate{Limit: r.Limit, Window: r.Window})
	}
	p, err := limiter.NewPolicy(sc.Policy, rates...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(p, limiter.WithClock(limitertest.New(sc.Start)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}
