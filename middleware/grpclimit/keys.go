package grpclimit

import (
	"context"
	"fmt"
	"net"
	"strings"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/fixedwindow/ratelimit/internal/addrkey"
	"github.com/fixedwindow/ratelimit/internal/keyform"
	"github.com/fixedwindow/ratelimit/keyfunc"
)

// A KeyFunc resolves the rate-limit key of a call: the identity whose
// budget the call spends. fullMethod is the call's method,
// "/package.Service/Method". It returns a non-empty key, or an error that
// wraps keyfunc.ErrNoKey when the call carries no usable identity (the
// interceptor answers INVALID_ARGUMENT), or keyfunc.ErrMisconfigured when
// it cannot work where it is installed (INTERNAL).
//
// The KeyFuncs of this package give the keys keyfunc's Funcs give a
// request from the same client: PeerHost the key of keyfunc.RemoteHost,
// Metadata("x-api-key") that of keyfunc.Header("X-API-Key"), Principal
// that of keyfunc.Principal, and First and Join follow keyfunc's rules.
// So an HTTP route and a gRPC method limited by one *limiter.Limiter and
// keyed alike spend one budget per client, whichever door it comes
// through. A KeyFunc is safe for concurrent use. The zero KeyFunc is nil
// and cannot be called.
type KeyFunc func(ctx context.Context, fullMethod string) (string, error)

// Must returns f, and panics if err is not nil: for key functions built
// from literals, as in Must(Metadata("x-api-key")).
func Must(f KeyFunc, err error) KeyFunc {
	if err != nil {
		panic(err)
	}
	return f
}

// PeerHost returns a KeyFunc that keys a call by the IP address of its
// peer, the TCP client, as keyfunc.RemoteHost keys an HTTP request: the
// port dropped, an IPv4-mapped address folded to IPv4, a zone dropped, an
// IPv6 address grouped by its /64 ("ip6:2001:db8:1:2::/64"), and an IPv6
// address that carries an IPv4 client (NAT64) keyed by that client. A
// call whose peer is not an IP address (a Unix socket, an in-memory
// listener) has no key: an error wrapping keyfunc.ErrNoKey.
//
// Behind a proxy that terminates gRPC every call comes from the proxy:
// key by what the proxy forwards (Metadata) or by the principal there.
func PeerHost() KeyFunc {
	return func(ctx context.Context, _ string) (string, error) {
		p, ok := peer.FromContext(ctx)
		if !ok || p.Addr == nil {
			return "", errNoPeer
		}
		if tcp, ok := p.Addr.(*net.TCPAddr); ok {
			a := tcp.AddrPort().Addr()
			if !a.IsValid() {
				return "", fmt.Errorf("%w: peer address %v is not an IP address", keyfunc.ErrNoKey, p.Addr)
			}
			return addrkey.Key(addrkey.Normalize(a), 32, 64), nil
		}
		return "", fmt.Errorf("%w: peer address %v (%s) is not TCP", keyfunc.ErrNoKey, p.Addr, p.Addr.Network())
	}
}

// errNoPeer is one value, not one per call.
var errNoPeer = fmt.Errorf("%w: no peer in the call's context", keyfunc.ErrNoKey)

// Metadata returns a KeyFunc that keys a call by the value of one
// metadata entry the client sent, such as "x-api-key": the key is
// keyfunc.Header's for the header of that name, "hdr:X-Api-Key:k-123", so
// that a client sending its key as an HTTP header and as gRPC metadata
// has one budget. Surrounding spaces are removed; keys longer than 256
// bytes are hashed. A call without the entry, with an empty value, or
// with the entry given more than once has no key (keyfunc.ErrNoKey).
//
// opts are keyfunc.Header's (keyfunc.WithHashedValues,
// keyfunc.WithMaxKeyLen), and give the key keyfunc.Header gives with
// them: Metadata("x-api-key", keyfunc.WithHashedValues()) and
// keyfunc.Header("X-API-Key", keyfunc.WithHashedValues()) key one client
// alike. An option that does not apply to text (an address prefix) is an
// error wrapping ErrInvalidOption and keyfunc.ErrInvalidOption.
//
// name is case-insensitive, as metadata names are; it must be a valid
// metadata name (letters, digits, '-', '_', '.') that does not end in
// "-bin" (a binary entry is no text key) and does not start with "grpc-"
// (reserved for gRPC itself). A bad name is an error wrapping
// ErrInvalidOption.
//
// The entry is only as trustworthy as whatever checks it: key by an API
// key after authenticating it, or a client mints a fresh budget per call
// by sending a fresh value.
func Metadata(name string, opts ...keyfunc.Option) (KeyFunc, error) {
	lower := strings.ToLower(name)
	switch {
	case !validMetadataName(lower):
		return nil, fmt.Errorf("%w: Metadata: %q is not a valid metadata name", ErrInvalidOption, name)
	case strings.HasSuffix(lower, "-bin"):
		return nil, fmt.Errorf("%w: Metadata: %q is a binary entry, not text", ErrInvalidOption, name)
	case strings.HasPrefix(lower, "grpc-"):
		return nil, fmt.Errorf("%w: Metadata: %q is reserved for gRPC", ErrInvalidOption, name)
	}
	key, err := keyfunc.HeaderKey(lower, opts...)
	if err != nil {
		return nil, fmt.Errorf("%w: Metadata(%q): %w", ErrInvalidOption, name, err)
	}
	return func(ctx context.Context, _ string) (string, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		vs := md[lower]
		switch {
		case len(vs) == 0:
			return "", fmt.Errorf("%w: no %s metadata", keyfunc.ErrNoKey, lower)
		case len(vs) > 1:
			return "", fmt.Errorf("%w: %s metadata given %d times", keyfunc.ErrNoKey, lower, len(vs))
		}
		v := strings.TrimSpace(vs[0])
		if v == "" {
			return "", fmt.Errorf("%w: empty %s metadata", keyfunc.ErrNoKey, lower)
		}
		return key(v), nil
	}, nil
}

// validMetadataName reports whether s, in lower case, is a gRPC metadata
// name: 0-9 a-z - _ . only.
func validMetadataName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// Principal returns a KeyFunc that keys a call by its authenticated
// principal, as the accessor reports it from the call's context
// (typically a user or tenant id that an authentication interceptor
// stored there): the key is keyfunc.Principal's, "user:" and the id, so a
// user has one budget over HTTP and gRPC. Keys longer than 256 bytes are
// hashed. When the accessor reports false or an empty id, the call has no
// key (keyfunc.ErrNoKey); give First a fallback to key anonymous calls by
// address. A nil accessor is an error wrapping ErrInvalidOption.
func Principal(accessor func(ctx context.Context) (string, bool)) (KeyFunc, error) {
	if accessor == nil {
		return nil, fmt.Errorf("%w: Principal: nil principal accessor", ErrInvalidOption)
	}
	return func(ctx context.Context, _ string) (string, error) {
		id, ok := accessor(ctx)
		if !ok || id == "" {
			return "", errNoPrincipal
		}
		return keyform.Bound(keyform.PrincipalKind+id, keyform.DefaultMaxLen, false), nil
	}, nil
}

// errNoPrincipal is one value, not one per call: under First an anonymous
// call meets it on its way to the next alternative.
var errNoPrincipal = fmt.Errorf("%w: no authenticated principal", keyfunc.ErrNoKey)

// First returns a KeyFunc that tries alternatives in order and keys the
// call by the first that resolves, as keyfunc.First does: "by user when
// signed in, else by address" is First(principal, PeerHost()). An
// alternative without a key (keyfunc.ErrNoKey, or "") is passed over; any
// other error, and keyfunc.ErrMisconfigured, stops First and is returned
// wrapped. No alternative, or a nil one, is an error wrapping
// ErrInvalidOption.
func First(alternatives ...KeyFunc) (KeyFunc, error) {
	fs, err := checkFuncs("First", "alternative", alternatives)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string) (string, error) {
		return rules.First(len(fs), func(i int) (string, error) { return fs[i](ctx, method) })
	}, nil
}

// Join returns a KeyFunc whose key combines the keys of parts, in order,
// as keyfunc.Join does: "join:" and each part as a netstring, hashed over
// 256 bytes, so that one budget covers, say, a client on a method. The
// call has no key when any part has none. No part, or a nil one, is an
// error wrapping ErrInvalidOption.
func Join(parts ...KeyFunc) (KeyFunc, error) {
	ps, err := checkFuncs("Join", "part", parts)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, method string) (string, error) {
		return rules.Join(len(ps), func(i int) (string, error) { return ps[i](ctx, method) })
	}, nil
}

// checkFuncs returns a copy of fs, or an error if it is empty or holds a
// nil.
func checkFuncs(fn, what string, fs []KeyFunc) ([]KeyFunc, error) {
	if len(fs) == 0 {
		return nil, fmt.Errorf("%w: %s: no %s", ErrInvalidOption, fn, what)
	}
	for i, f := range fs {
		if f == nil {
			return nil, fmt.Errorf("%w: %s: %s %d is nil", ErrInvalidOption, fn, what, i)
		}
	}
	return append([]KeyFunc(nil), fs...), nil
}
