package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Bounds on what a request may carry.
const (
	maxKey    = 4 << 10  // a key, or a prefix to list, in bytes
	maxReason = 1 << 10  // a reason, in bytes
	maxBody   = 16 << 10 // a POST's body
)

// A refusal is a request the console will not act on as it stands: bad
// input (400), a refund past what the key used (409), a request from
// another origin or without its token (403). Its text says why, and is
// shown to the person who asked.
type refusal struct {
	status int
	msg    string
}

func (e *refusal) Error() string { return e.msg }

func badInput(format string, args ...any) error {
	return &refusal{http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

// checkKey refuses a key no store should be asked about: empty, longer
// than 4 KiB, or not UTF-8 (a key is shown on a page, and the page is
// UTF-8).
func checkKey(what, key string) error {
	switch {
	case key == "" && what == "key":
		return badInput("console: key is empty")
	case len(key) > maxKey:
		return badInput("console: %s is %d bytes, more than %d", what, len(key), maxKey)
	case !utf8.ValidString(key):
		return badInput("console: %s is not valid UTF-8", what)
	}
	return nil
}

// A change is what a POST asks for: a reset or a refund of key, with a
// reason, and the CSRF token that came with it.
type change struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
	Policy string `json:"policy"`
	Amount int64  `json:"amount"`
	token  string
	// bad is why a form's amount is no number: reported by check, once
	// the token has been checked.
	bad error
	// badKey is why a form's key64 is no key: reported by check.
	badKey error
	// unconfirmed is a form's reset whose confirmation box was not
	// ticked: refused by check.
	unconfirmed bool
}

// isJSON reports whether r's body is JSON (a script's), not a form.
func isJSON(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "application/json"
}

// wantsJSON reports whether r should be answered in JSON: a JSON body, or
// an Accept header that asks for JSON and not a page.
func wantsJSON(r *http.Request) bool {
	accept := r.Header.Get("Accept")
	return isJSON(r) || strings.Contains(accept, "application/json") && !strings.Contains(accept, "text/html")
}

// readChange reads a POST's change, from a form or a JSON body (whose
// token comes in the X-CSRF-Token header), at most maxBody bytes.
func readChange(w http.ResponseWriter, r *http.Request, refund bool) (change, error) {
	var c change
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if isJSON(r) {
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return c, bodyError(err)
		}
	} else {
		if err := r.ParseForm(); err != nil {
			return c, bodyError(err)
		}
		f := r.PostForm
		c.Key, c.badKey = carriedKey(f)
		c.Reason, c.Policy, c.token = f.Get("reason"), f.Get("policy"), f.Get("csrf_token")
		if !refund && f.Get("confirm") != "reset" {
			// A Reset cannot be undone: the page's form asks for a
			// tick first. A script's JSON has confirmed in its code.
			c.unconfirmed = true
		}
		if a := f.Get("amount"); refund {
			n, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
			if err != nil {
				c.bad = badInput("console: amount %q is not a whole number", a)
			}
			c.Amount = n
		}
	}
	if t := r.Header.Get("X-CSRF-Token"); t != "" {
		c.token = t
	}
	return c, nil
}

// bodyError names a body that could not be read.
func bodyError(err error) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return &refusal{http.StatusRequestEntityTooLarge, fmt.Sprintf("console: request body over %d bytes", tooBig.Limit)}
	}
	return badInput("console: unreadable request body: %v", err)
}

// check refuses a change with a bad key, no reason, or (for a refund) an
// amount under 1 or no policy.
func (c *change) check(refund bool) error {
	if c.badKey != nil {
		return c.badKey
	}
	if err := checkKey("key", c.Key); err != nil {
		return err
	}
	c.Reason = strings.TrimSpace(c.Reason)
	if err := checkReason(c.Reason); err != nil {
		return err
	}
	switch {
	case !refund && c.unconfirmed:
		return badInput("console: tick the box to confirm the reset: it cannot be undone")
	case !refund:
		return nil
	case c.bad != nil:
		return c.bad
	case c.Amount < 1:
		return badInput("console: refund amount %d: must be at least 1", c.Amount)
	case c.Policy == "":
		return badInput("console: a refund names the policy to refund")
	}
	return nil
}

// checkReason refuses a reason that is empty, over 1 KiB, not UTF-8, or
// that holds a control or invisible character: an audit log writes the
// reason on a line of its own, which a line break would forge the next
// line of, and a bidi override reorder.
func checkReason(reason string) error {
	switch {
	case reason == "":
		return badInput("console: a reason is required")
	case len(reason) > maxReason:
		return badInput("console: reason is %d bytes, more than %d", len(reason), maxReason)
	case !utf8.ValidString(reason):
		return badInput("console: reason is not valid UTF-8")
	case strings.ContainsFunc(reason, hidden):
		r := []rune(reason[strings.IndexFunc(reason, hidden):])[0]
		return badInput("console: reason has a control or invisible character (U+%04X): write it on one line, in plain text", r)
	}
	return nil
}
