package headers

import (
	"net/http"
	"strconv"

	"github.com/fixedwindow/ratelimit/internal/refusal"
	"github.com/fixedwindow/ratelimit/limiter"
)

// WriteDenied writes the whole 429 Too Many Requests response for d: the
// headers of Write, Retry-After (always, since a 429 must say when to come
// back, but for a cost no wait can admit: d.CostExceedsLimit, whose body
// says so), Cache-Control: no-store, and a short body, plain text or RFC
// 9457 problem+json (WithProblemJSON). It never writes an error's text.
// A window shorter than a second is refused as HTTP can say it:
// Retry-After, X-RateLimit-Reset and the draft's t count whole seconds,
// rounded up, at least 1; the problem body adds the exact wait in
// milliseconds, "retry_after_ms":70, for a client that can wait less.
// all lists the decisions of every limit that applied to the request,
// as Write takes them: d is the refusal, and the draft fields and each
// unit's set describe every one.
func (w *Writer) WriteDenied(rw http.ResponseWriter, r *http.Request, d *limiter.Decision, all ...*limiter.Decision) {
	h := rw.Header()
	retry := int64(1)
	if d != nil {
		w.Write(h, d, all...)
		retry = refusal.Seconds(d.RetryAfter)
	}
	if refusal.Never(d) {
		retry = 0
		delete(h, w.names.RetryAfter)
	} else {
		h[w.names.RetryAfter] = []string{strconv.FormatInt(retry, 10)}
	}
	h["Cache-Control"] = []string{"no-store"}
	h["X-Content-Type-Options"] = []string{"nosniff"}
	var body []byte
	if w.problem != nil {
		h["Content-Type"] = []string{"application/problem+json"}
		body = w.problemBody(d, retry)
	} else {
		h["Content-Type"] = []string{"text/plain; charset=utf-8"}
		body = textBody(d, retry)
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	rw.WriteHeader(http.StatusTooManyRequests)
	if r == nil || r.Method != http.MethodHead {
		_, _ = rw.Write(body)
	}
}

// textBody is "rate limit exceeded; retry in 30 seconds\n", or for an
// in-flight cap "concurrency limit exceeded; ...", or for a cost no wait
// can admit the problem body's detail (internal/refusal's text).
func textBody(d *limiter.Decision, retry int64) []byte {
	b := make([]byte, 0, 80)
	if refusal.Never(d) {
		return append(refusal.AppendText(b, d, retry), '\n')
	}
	if refusal.IsCap(d) {
		b = append(b, "concurrency"...)
	} else {
		b = append(b, "rate"...)
	}
	b = append(b, " limit exceeded; retry in "...)
	b = strconv.AppendInt(b, retry, 10)
	b = append(b, " second"...)
	if retry != 1 {
		b = append(b, 's')
	}
	return append(b, '\n')
}

// problemBody builds the problem+json body. Every string in it is either
// fixed at construction (already JSON-encoded) or made of digits and
// policy-name characters, so it needs no escaping here.
func (w *Writer) problemBody(d *limiter.Decision, retry int64) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"type":`...)
	b = append(b, w.problem.typ...)
	b = append(b, `,"title":`...)
	b = append(b, w.problem.title...)
	b = append(b, `,"status":429,"detail":"`...)
	b = refusal.AppendText(b, d, retry) // the detail's words, which gRPC's refusal uses too
	inFlight := refusal.IsCap(d)
	b = append(b, '"')
	if !refusal.Never(d) {
		b = append(b, `,"retry_after":`...)
		b = strconv.AppendInt(b, retry, 10)
	}
	if ms, ok := refusal.SubSecond(d); ok {
		b = append(b, `,"retry_after_ms":`...)
		b = strconv.AppendInt(b, ms, 10)
	}
	if d != nil && (d.Window > 0 || inFlight) {
		b = append(b, `,"violated-policies":["`...)
		b = append(b, w.windowOf(d)...)
		b = append(b, `"]`...)
	}
	return append(b, "}\n"...)
}

// windowOf returns the name of d's deciding window, as the draft fields
// name it ("api-1m", "plan-day").
func (w *Writer) windowOf(d *limiter.Decision) string {
	if d.Policy != nil {
		info := w.policies.get(d.Policy)
		if i := info.deciding(d); i >= 0 {
			return info.names[i]
		}
	}
	return windowName(d.Policy, d.Window)
}
