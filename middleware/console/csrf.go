package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"time"
)

// minSecret is the least CSRFSecret: a key for HMAC-SHA256 as long as
// its output.
const minSecret = 32

// tokenPeriod is how often the CSRF token rotates: a token is taken in
// the period it was made and the next, so it lasts from one to two
// periods. An open page is handed the current token by its live view
// every second, and keeps working while open.
const tokenPeriod = time.Hour

// tokenLabel separates the console's MACs from any other use of the
// secret.
const tokenLabel = "ratelimit console csrf\x00"

// token returns who's CSRF token at now: the period's number, then
// HMAC-SHA256 of it and who under the handler's secret. It is bound to
// the person Authorize named, so a token taken from one person's page
// is refused from another's; it expires, so one that leaked (in a log)
// is refused after two periods at most; and it needs no state: any
// replica with the secret checks it.
func (h *handler) token(who string, now time.Time) string {
	return h.tokenOf(who, period(now))
}

// tokenFor is who's token now if they may change, else "": a person who
// may only look is handed no token.
func (h *handler) tokenFor(who string, may Access) string {
	if mayChange(who, may) != nil {
		return ""
	}
	return h.token(who, h.clock.Now())
}

func period(now time.Time) uint64 { return uint64(now.Unix() / int64(tokenPeriod/time.Second)) }

func (h *handler) tokenOf(who string, p uint64) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+sha256.Size), p)
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(tokenLabel))
	m.Write(b)
	m.Write([]byte(who))
	return base64.RawURLEncoding.EncodeToString(m.Sum(b))
}

// validToken reports whether got is who's token of the period of now or
// of the one before, comparing the MAC in constant time.
func (h *handler) validToken(who, got string, now time.Time) bool {
	b, err := base64.RawURLEncoding.DecodeString(got)
	if err != nil || len(b) != 8+sha256.Size {
		return false
	}
	p, cur := binary.BigEndian.Uint64(b), period(now)
	if p != cur && p+1 != cur {
		return false
	}
	return hmac.Equal([]byte(got), []byte(h.tokenOf(who, p)))
}

// withoutToken returns r without its CSRF token (the X-CSRF-Token
// header, a form's csrf_token), for the observer: an audit log that logs
// a request's headers or form must not keep a token another could use.
// r itself is left as it is.
func withoutToken(r *http.Request) *http.Request {
	if r == nil || r.Header.Get("X-CSRF-Token") == "" && !r.Form.Has("csrf_token") && !r.PostForm.Has("csrf_token") {
		return r
	}
	c := r.Clone(r.Context())
	c.Header.Del("X-CSRF-Token")
	c.Form.Del("csrf_token")
	c.PostForm.Del("csrf_token")
	return c
}
