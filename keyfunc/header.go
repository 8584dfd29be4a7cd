package keyfunc

import (
	"fmt"
	"net/http"
	"net/textproto"
	"strings"

	"github.com/fixedwindow/ratelimit/internal/keyform"
)

// Header returns a Func that keys a request by the value of one request
// header, such as X-API-Key: the key is "hdr:", the canonical header name,
// ':' and the value with surrounding spaces removed, for example
// "hdr:X-Api-Key:k-123". Header names contain no ':', so the name and the
// value cannot run into each other. Keys longer than the bound are hashed
// (WithMaxKeyLen); WithHashedValues hashes every key, to keep secrets out
// of the store.
//
// A request without the header, with an empty value, or with the header
// given more than once (two values would make the key ambiguous) yields an
// error wrapping ErrNoKey. The name must be a valid header field name;
// WithIPv4Prefix and WithIPv6Prefix, which concern addresses, are
// constructor errors.
//
// The header is only as trustworthy as whatever checks it: key by an API
// key after authenticating it, or an attacker mints a fresh budget per
// request by sending a fresh value.
func Header(name string, opts ...Option) (Func, error) {
	key, err := headerKey("Header", name, opts)
	if err != nil {
		return nil, err
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	return func(r *http.Request) (string, error) {
		vs := r.Header[canon]
		switch {
		case len(vs) == 0:
			return "", fmt.Errorf("%w: no %s header", ErrNoKey, canon)
		case len(vs) > 1:
			return "", fmt.Errorf("%w: %s header given %d times", ErrNoKey, canon, len(vs))
		}
		v := strings.TrimSpace(vs[0])
		if v == "" {
			return "", fmt.Errorf("%w: empty %s header", ErrNoKey, canon)
		}
		return key(v), nil
	}, nil
}

// HeaderKey returns the function that gives the key Header(name, opts...)
// gives a request whose header name has value v (surrounding spaces
// removed by the caller, and not empty), for a door that carries the
// header otherwise than in an http.Request: grpclimit.Metadata keys gRPC
// metadata with it, so that one API key is one key, hashed or bounded
// alike, on both doors. Its arguments are checked as Header's are.
func HeaderKey(name string, opts ...Option) (func(v string) string, error) {
	return headerKey("HeaderKey", name, opts)
}

// headerKey is HeaderKey, with fn naming the constructor in errors.
func headerKey(fn, name string, opts []Option) (func(v string) string, error) {
	if !validToken(name) {
		return nil, fmt.Errorf("%w: %s: header name %q is not a valid field name", ErrInvalidOption, fn, name)
	}
	c, err := newConfig(fn, textKind, opts)
	if err != nil {
		return nil, err
	}
	prefix := keyform.HeaderKind + textproto.CanonicalMIMEHeaderKey(name) + ":"
	return func(v string) string { return bound(prefix+v, c.maxLen, c.hashAll) }, nil
}

// validToken reports whether s is an RFC 9110 token, the syntax of a
// header field name.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isTchar(s[i]) {
			return false
		}
	}
	return true
}
