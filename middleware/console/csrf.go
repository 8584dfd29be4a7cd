package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
)

// minSecret is the least CSRFSecret: a key for HMAC-SHA256 as long as
// its output.
const minSecret = 32

// token returns the CSRF token of who: HMAC-SHA256 of who under the
// handler's secret. It is bound to the person Authorize named, so a
// token taken from one person's page is refused from another's, and
// needs no state: any replica with the secret checks it.
func (h *handler) token(who string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte("ratelimit console csrf\x00"))
	m.Write([]byte(who))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validToken reports whether got is who's token, in constant time.
func (h *handler) validToken(who, got string) bool {
	return got != "" && hmac.Equal([]byte(got), []byte(h.token(who)))
}
