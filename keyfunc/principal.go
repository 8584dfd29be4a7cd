package keyfunc

import (
	"fmt"
	"net/http"

	"github.com/fixedwindow/ratelimit/internal/keyform"
)

// Principal returns a Func that keys a request by its authenticated
// principal, as the accessor reports it (typically a user or tenant id
// that an authentication middleware stored in the request's context): the
// key is "user:" and the id, for example "user:42". Keys longer than the
// bound are hashed (WithMaxKeyLen, WithHashedValues).
//
// When the accessor reports false or an empty id, the Func returns an
// error wrapping ErrNoKey: an anonymous request never shares one bucket
// with every other anonymous request. To key signed-in users by their id
// and anonymous clients by their address, give both to First:
// First(principal, remoteHost). A nil accessor is a constructor error, as
// are WithIPv4Prefix and WithIPv6Prefix, which concern addresses.
func Principal(accessor func(*http.Request) (string, bool), opts ...Option) (Func, error) {
	if accessor == nil {
		return nil, fmt.Errorf("%w: Principal: nil principal accessor", ErrInvalidOption)
	}
	c, err := newConfig("Principal", textKind, opts)
	if err != nil {
		return nil, err
	}
	return func(r *http.Request) (string, error) {
		id, ok := accessor(r)
		if !ok || id == "" {
			return "", errNoPrincipal
		}
		return bound(keyform.PrincipalKind+id, c.maxLen, c.hashAll), nil
	}, nil
}

// errNoPrincipal is one value, not one per request: under First an
// anonymous request meets it on its way to the next alternative.
var errNoPrincipal = fmt.Errorf("%w: no authenticated principal", ErrNoKey)
