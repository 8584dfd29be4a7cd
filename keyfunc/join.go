package keyfunc

import (
	"fmt"
	"net/http"
)

// Join returns a Func whose key combines the keys of parts, in order, so
// that one budget covers, say, a client on a route. Each part is written
// as a netstring (its length in decimal, ':', the part, ','), after the
// prefix "join:": ("a:b", "c") gives "join:3:a:b,1:c," and ("a", "b:c")
// gives "join:1:a,3:b:c,", so no two lists of parts give the same key. A
// joined key longer than 256 bytes is hashed.
//
// The request has no key when any part has none: the error of the first
// failing part is returned, wrapped, and still matches ErrNoKey.
//
// No part, or a nil one, is a constructor error wrapping
// ErrInvalidOption, found when the Func is built, not on a request.
func Join(parts ...Func) (Func, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: Join: no part", ErrInvalidOption)
	}
	for i, p := range parts {
		if p == nil {
			return nil, fmt.Errorf("%w: Join: part %d is nil", ErrInvalidOption, i)
		}
	}
	ps := append([]Func(nil), parts...)
	return func(r *http.Request) (string, error) {
		return rules.Join(len(ps), func(i int) (string, error) { return ps[i](r) })
	}, nil
}
