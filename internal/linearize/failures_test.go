package linearize

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// A failure is one operation that failed, whether or not it was sent:
// when it was called and returned (ns, as an Op's times), what it was
// and why.
type failure struct {
	call, ret int64
	kind      Kind
	key       string
	err       string
}

func byCallTime(a, b failure) int { return cmp.Compare(a.call, b.call) }

// storeTimeout is redisstore's default timeout: how long after a fault
// ends a call it caught may still fail, and how long before it starts a
// call it fails may have been sent.
const storeTimeout = 100 * time.Millisecond

// excuses reports whether a fault of kind may fail a call: every fault
// but a clock step, which the stores take in their stride (its steps
// stay within the expiry margin).
func excuses(kind string) bool { return kind != clockStep.name }

// unexcused returns the failures that no fault of h explains: every
// failure of a history without faults, and otherwise those called
// outside every fault's span, widened by the store's timeout either
// side. A failure is the store or its scripts disagreeing with
// themselves (a reply the Go side refuses, a script error) unless
// something failed the call: the history records it as an operation
// that may or may not have happened, which the model accepts, so the
// bound is checked here.
func unexcused(fs []failure, faults []Fault, timeout time.Duration) []failure {
	var out []failure
	for _, f := range fs {
		excused := false
		for _, ft := range faults {
			if excuses(ft.Kind) && f.call >= ft.Start-int64(timeout) && f.call <= ft.End+int64(timeout) {
				excused = true
				break
			}
		}
		if !excused {
			out = append(out, f)
		}
	}
	return out
}

// boundFailures fails the test for every failure of r no fault explains
// (unexcused), showing the first few.
func (r *run) boundFailures(h *History) {
	r.t.Helper()
	bad := unexcused(r.rec.failures, h.Faults, r.timeout)
	if len(bad) == 0 {
		return
	}
	slices.SortFunc(bad, byCallTime)
	var b strings.Builder
	for _, f := range bad[:min(len(bad), 5)] {
		fmt.Fprintf(&b, "\n  %s %s called at %v, failed at %v: %s", f.kind, f.key,
			time.Duration(f.call).Round(time.Millisecond), time.Duration(f.ret).Round(time.Millisecond), f.err)
	}
	r.t.Errorf("%s seed %d: %d of %d operations failed outside every fault's span (±%v), %d faults:%s",
		h.Name, h.Seed, len(bad), len(h.Ops), r.timeout, len(h.Faults), b.String())
}

func TestUnexcused(t *testing.T) {
	ms := int64(time.Millisecond)
	pause := Fault{Kind: "pause", Start: 1000 * ms, End: 1200 * ms}
	step := Fault{Kind: clockStep.name, Start: 2000 * ms, End: 2200 * ms}
	for _, tc := range []struct {
		name   string
		call   int64 // ms
		faults []Fault
		want   bool // unexcused
	}{
		{"no_fault", 500, nil, true},
		{"during_the_fault", 1100, []Fault{pause}, false},
		{"sent_within_the_timeout_before", 901, []Fault{pause}, false},
		{"sent_before_the_timeout_before", 899, []Fault{pause}, true},
		{"within_the_timeout_after", 1299, []Fault{pause}, false},
		{"past_the_timeout_after", 1301, []Fault{pause}, true},
		{"during_a_clock_step", 2100, []Fault{pause, step}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := []failure{{call: tc.call * ms, kind: Allow, key: "k", err: "bad reply"}}
			if got := len(unexcused(fs, tc.faults, 100*time.Millisecond)) == 1; got != tc.want {
				t.Fatalf("call at %d ms, faults %v: unexcused %v, want %v", tc.call, tc.faults, got, tc.want)
			}
		})
	}
}
