package migrating

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fixedwindow/ratelimit/internal/leakcheck"
)

// TestMain fails the package if a goroutine outlives the tests. ulule's
// memory store starts a cleaner that nothing stops: the service's setup,
// not ours.
func TestMain(m *testing.M) {
	leakcheck.VerifyTestMain(m,
		leakcheck.IgnoreTopFunction("github.com/ulule/limiter/v3/drivers/store/memory.(*cleaner).Run"))
}

// noon30 is 12:00:30 UTC, thirty seconds into a minute: where our side's
// clock starts.
var noon30 = time.Date(2026, 7, 31, 12, 0, 30, 0, time.UTC)

// ok is the service's handler.
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })

// An answer is what a client got: the status and the headers.
type answer struct {
	code int
	h    http.Header
}

// ask sends n GET requests from the client address remote (port 1234)
// to h.
func ask(h http.Handler, remote string, n int) []answer {
	as := make([]answer, n)
	for i := range as {
		r := httptest.NewRequest(http.MethodGet, "/api/items", nil)
		r.RemoteAddr = remote + ":1234"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		as[i] = answer{w.Code, w.Header()}
	}
	return as
}

// codes lists the statuses: "200 200 429".
func codes(as []answer) string {
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = fmt.Sprint(a.code)
	}
	return strings.Join(s, " ")
}

// values lists one header's values, "-" where it is missing: "2 1 0 0".
func values(as []answer, name string) string {
	s := make([]string, len(as))
	for i, a := range as {
		if s[i] = a.h.Get(name); s[i] == "" {
			s[i] = "-"
		}
	}
	return strings.Join(s, " ")
}

// names lists the rate-limit header names of an answer, sorted, as Go
// writes them (header names are case-insensitive on the wire).
func names(a answer) string {
	var ns []string
	for n := range a.h {
		switch n {
		case "Content-Type", "X-Content-Type-Options":
		default:
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	if len(ns) == 0 {
		return "(none)"
	}
	return strings.Join(ns, " ")
}

// admitted counts the requests h admits from remote, one every step
// for d, moving clk (the clock of the setup under test) between them.
func admitted(h http.Handler, clk interface{ Advance(time.Duration) }, remote string, step, d time.Duration) int {
	n := 0
	for t := time.Duration(0); t < d; t += step {
		if ask(h, remote, 1)[0].code == http.StatusOK {
			n++
		}
		clk.Advance(step)
	}
	return n
}

// report prints what a client saw of a side's four answers, three
// admitted and one refused: the statuses, the remaining counts, the
// header names of the first and the last answer, and what Retry-After
// holds.
func report(side string, as []answer) {
	fmt.Println(side)
	fmt.Println("  status:     ", codes(as))
	fmt.Println("  remaining:  ", values(as, "X-RateLimit-Remaining"))
	fmt.Println("  admitted:   ", names(as[0]))
	fmt.Println("  refused:    ", names(as[len(as)-1]))
	fmt.Println("  Retry-After:", retryAfter(as[len(as)-1].h.Get("Retry-After")))
}

// retryAfter says what a client reading v finds: a number of seconds,
// an HTTP date, or a date that a strict HTTP-date parser (http.ParseTime,
// which wants GMT) rejects.
func retryAfter(v string) string {
	if v == "" {
		return "(none)"
	}
	if _, err := strconv.Atoi(v); err == nil {
		return v + " (seconds)"
	}
	if _, err := http.ParseTime(v); err == nil {
		return "an HTTP date"
	}
	if _, err := time.Parse(time.RFC1123, v); err == nil {
		return "an RFC 1123 date that is no HTTP date (" + v[len(v)-3:] + ", not GMT)"
	}
	return "unreadable: " + v
}
