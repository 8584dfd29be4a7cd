package headers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/fixedwindow/ratelimit/limiter"
)

// An in-flight cap (limiter.InFlight) is a policy of its own unit, as
// the draft has it: RateLimit-Policy lists it as
//
//	"exports";q=5;qu="concurrent-requests"
//
// and RateLimit gives the slots left, with no t (a cap has no window to
// reset):
//
//	"exports";r=3
//
// A cap's refusal (a Decision of InFlight.Acquire) is written as any
// other: X-RateLimit-Limit and -Remaining describe the cap, there is no
// X-RateLimit-Reset, and Retry-After says what the refusal's RetryAfter
// does (see limiter.InFlight). An admission by a cap beside rates is
// added to the draft fields with WriteInFlight.

// concurrentUnit is the draft's quota unit of a cap.
const concurrentUnit = `;qu="concurrent-requests"`

// isCap reports whether d is an in-flight cap's decision.
func isCap(d *limiter.Decision) bool { return d != nil && d.Policy.MaxInFlight() > 0 }

// capPolicyItem returns a cap's RateLimit-Policy item.
func capPolicyItem(quoted string, max int64) string {
	return quoted + ";q=" + strconv.FormatInt(sfInteger(max), 10) + concurrentUnit
}

// appendCapItem appends a cap's RateLimit item: "name";r=remaining.
func appendCapItem(b []byte, quoted string, remaining int64) []byte {
	b = append(b, quoted...)
	b = append(b, ";r="...)
	return strconv.AppendInt(b, sfInteger(remaining), 10)
}

// WriteInFlight adds to the draft fields that Write set on h the caps
// that admitted the request: each decision of caps (an admission by
// limiter.InFlight.Acquire) adds its slots left to RateLimit and its
// policy to RateLimit-Policy, unless Write already listed it (given it
// among all).
// Call it after Write, for the same response: the rates' decision
// describes the window, the caps' their slots. It does nothing without
// WithDraftHeaders (a cap has no X-RateLimit-* fields of its own beside
// a rate's), and skips a decision that is no cap's.
//
// It allocates the two longer values, once per call.
func (w *Writer) WriteInFlight(h http.Header, caps ...*limiter.Decision) {
	if !w.draft || len(caps) == 0 {
		return
	}
	var limit, policy []byte
	rl, rp := first(h, w.names.RateLimit), first(h, w.names.RateLimitPolicy)
	for _, d := range caps {
		if !isCap(d) {
			continue
		}
		info := w.policies.get(d.Policy)
		if listed(rp, info.policy) || listed(string(policy), info.policy) {
			continue
		}
		if limit == nil {
			limit = append(make([]byte, 0, len(rl)+64), rl...)
		}
		if len(limit) > 0 {
			limit = append(limit, ", "...)
		}
		limit = appendCapItem(limit, info.quoted[0], d.Remaining)
		if policy == nil {
			policy = append(make([]byte, 0, len(rp)+64), rp...)
		}
		if len(policy) > 0 {
			policy = append(policy, ", "...)
		}
		policy = append(policy, info.policy...)
	}
	if limit != nil {
		h[w.names.RateLimit] = []string{string(limit)}
	}
	if policy != nil {
		h[w.names.RateLimitPolicy] = []string{string(policy)}
	}
}

// first returns the first value of h's field name, or "".
func first(h http.Header, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// listed reports whether the list value holds item as a member.
func listed(list, item string) bool {
	for list != "" {
		var m string
		m, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(m) == item {
			return true
		}
	}
	return false
}
