package keyfunc

import (
	"errors"
	"net/http"
)

// A Func resolves the rate-limit key of a request: the identity whose
// budget the request spends. It returns a non-empty key, or an error that
// wraps ErrNoKey when the request carries no usable identity. A Func never
// returns an empty key with a nil error, so no unresolvable request falls
// into a bucket shared by everyone.
//
// Every Func of this package prefixes its keys with their kind ("ip6:",
// "hdr:", "user:", "route:", "join:", "sha256:"), or gives a bare IPv4
// address or prefix ("203.0.113.7"), which no prefixed key resembles, so
// keys of two kinds never collide. First passes an alternative's key on
// unchanged, so it keeps that promise. A Func is safe for concurrent use.
// The zero Func is nil and cannot be called; Join and First reject it.
type Func func(r *http.Request) (string, error)

// Errors reported by this package. Test with errors.Is.
var (
	// ErrNoKey is wrapped by every error that means "this request has no
	// usable key": a RemoteAddr that is neither host:port nor an IP
	// address, a missing or empty header, no principal, no route pattern, a
	// forwarding header that is malformed or names no client.
	ErrNoKey = errors.New("keyfunc: no key")
	// ErrMisconfigured is wrapped, together with ErrNoKey, by the errors
	// of a key function that cannot work where the server installed it:
	// RoutePattern or Endpoint where no router can say which route
	// serves the request (around a ServeMux), chikey.ClientIP with no
	// ClientIPFrom* middleware before it. No request would ever get a key there, so it is the
	// server's mistake, not the client's: the middleware answers 500,
	// not the 400 of a client that could not be identified, and First
	// does not pass over it.
	ErrMisconfigured = errors.New("keyfunc: misconfigured")
	// ErrInvalidOption is wrapped by every constructor error: a bad
	// prefix, header name, bound or nil accessor, a nil Option or one
	// that does not concern the constructor, no or a nil alternative of
	// First or part of Join.
	ErrInvalidOption = errors.New("keyfunc: invalid option")
)

// maxQuoted bounds how much of a client-supplied value an error message
// quotes, so a hostile header cannot flood the logs.
const maxQuoted = 64

// clip shortens s for quoting in an error message.
func clip(s string) string {
	if len(s) <= maxQuoted {
		return s
	}
	return s[:maxQuoted] + "..."
}

// Must returns f and panics if err is not nil, so that a key function
// built from values fixed in code takes one expression, as
// text/template.Must does for templates:
//
//	apiKey := keyfunc.Must(keyfunc.Header("X-API-Key"))
//	key := keyfunc.Must(keyfunc.First(apiKey, keyfunc.Must(keyfunc.RemoteHost())))
//
// It wraps every fallible constructor of this package and of chikey,
// which all return (Func, error). Where an argument comes from
// configuration (a header name, trusted prefixes read at start-up),
// handle the error instead: its text names what is wrong.
func Must(f Func, err error) Func {
	if err != nil {
		panic(err)
	}
	return f
}
