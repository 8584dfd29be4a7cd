package keyfunc

import (
	"fmt"
	"net/http"

	"github.com/fixedwindow/ratelimit/internal/keyform"
)

// First returns a Func that tries alternatives in order and keys the
// request by the first that resolves: "by user when signed in, else by
// address" is
//
//	keyfunc.First(principal, remoteHost)
//
// with principal from Principal and remoteHost from RemoteHost. The key is
// the alternative's own key, unchanged: a signed-in user is "user:42"
// whichever address it comes from, and an anonymous client "203.0.113.7".
// Since every Func of this package prefixes its keys with their kind, a
// user whose id is "203.0.113.7" gets "user:203.0.113.7" and never shares
// an anonymous address's budget. A Func of your own given to First must
// keep that promise: prefix its keys with a kind no other alternative uses.
//
// An alternative that fails with an error wrapping ErrNoKey (or returns
// "") is passed over. Any other error stops First and is returned,
// wrapped: a principal lookup that broke should not quietly downgrade a
// user to an address. So does an error wrapping ErrMisconfigured: an
// alternative that can never resolve where it is installed is the
// server's mistake, to be reported, not a fallback taken on every
// request. When no alternative resolves, the error is the last
// alternative's, wrapped, and so still matches ErrNoKey.
//
// No alternative, or a nil one, is a constructor error wrapping
// ErrInvalidOption, found when the Func is built, not on a request.
func First(alternatives ...Func) (Func, error) {
	if len(alternatives) == 0 {
		return nil, fmt.Errorf("%w: First: no alternative", ErrInvalidOption)
	}
	for i, f := range alternatives {
		if f == nil {
			return nil, fmt.Errorf("%w: First: alternative %d is nil", ErrInvalidOption, i)
		}
	}
	fs := append([]Func(nil), alternatives...)
	return func(r *http.Request) (string, error) {
		return rules.First(len(fs), func(i int) (string, error) { return fs[i](r) })
	}, nil
}

// rules are this package's errors for the key forms it shares with
// grpclimit (internal/keyform).
var rules = keyform.Rules{Prefix: "keyfunc", NoKey: ErrNoKey, Misconfigured: ErrMisconfigured}
