package console

import (
	"encoding/base64"
	"net/url"
)

// The page carries a key in attributes (the hidden inputs of its forms,
// the data-key64 its script opens the live view with) base64url-encoded,
// never as it is: an HTML attribute turns NUL into U+FFFD and CR into
// LF, and a form's submission turns LF into CR LF, so a key carried raw
// could be shown on the page and another key acted on. Encoded, every
// key the lookup accepts comes back byte for byte. A query string and a
// JSON body carry any key exactly, so ?key=K and {"key": K} stay raw.

// key64 encodes key for an attribute.
func key64(key string) string { return base64.RawURLEncoding.EncodeToString([]byte(key)) }

// carriedKey returns the key v (a query or a form) carries: key64,
// decoded, if v has one, else key.
func carriedKey(v url.Values) (string, error) {
	if !v.Has("key64") {
		return v.Get("key"), nil
	}
	b, err := base64.RawURLEncoding.DecodeString(v.Get("key64"))
	if err != nil {
		return "", badInput("console: key64 is not base64url without padding")
	}
	return string(b), nil
}
