package headers

import (
	"strconv"
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
// does (see limiter.InFlight). Caps that admitted a request are listed
// with the rates by Write, given among all: each cap's slots left in
// RateLimit, its policy in RateLimit-Policy.

// concurrentUnit is the draft's quota unit of a cap.
const concurrentUnit = `;qu="concurrent-requests"`

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
