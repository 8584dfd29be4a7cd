package console

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"strings"
	"time"
)

// After a change the page says what was done, and only that: the
// redirect to the key's page carries the notice's text with a MAC of it,
// the person and the key under the CSRF secret, and the page shows a
// notice whose MAC holds. A ?done= written by hand, or taken from another
// person's or another key's page, shows nothing. The text says when, so
// it stays true when the page is reloaded later.

const noticeLabel = "ratelimit console notice\x00"

// noticeLayout dates a notice, in UTC as the events are.
const noticeLayout = "2006-01-02 15:04:05 UTC"

// resetNotice and refundText are the notices of a reset and a refund
// done at at.
func resetNotice(at time.Time) string {
	return "Key reset at " + at.UTC().Format(noticeLayout) + ": its next request starts a fresh budget, on every replica within a second."
}

func refundText(at time.Time, policy string, amount int64, back []returned) string {
	return fmt.Sprintf("Refund of %d under %q applied at %s: %s. Every replica sees it within a second.",
		amount, policy, at.UTC().Format(noticeLayout), refundNotice(back))
}

// signNotice returns the ?done= value that makes the page of key show
// text to who.
func (h *handler) signNotice(who, key, text string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(text)) + "." + base64.RawURLEncoding.EncodeToString(h.noticeMAC(who, key, text))
}

// readNotice returns the text done carries, if its MAC is who's for key;
// else "".
func (h *handler) readNotice(who, key, done string) string {
	t64, m64, ok := strings.Cut(done, ".")
	text, err1 := base64.RawURLEncoding.DecodeString(t64)
	mac, err2 := base64.RawURLEncoding.DecodeString(m64)
	if !ok || err1 != nil || err2 != nil || !hmac.Equal(mac, h.noticeMAC(who, key, string(text))) {
		return ""
	}
	return string(text)
}

func (h *handler) noticeMAC(who, key, text string) []byte {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(noticeLabel))
	for _, s := range []string{who, key} {
		m.Write(binary.BigEndian.AppendUint64(nil, uint64(len(s))))
		m.Write([]byte(s))
	}
	m.Write([]byte(text))
	return m.Sum(nil)
}
