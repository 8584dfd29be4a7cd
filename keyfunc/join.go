package keyfunc

import (
	"fmt"
	"net/http"
	"strconv"
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
		var buf [defaultMaxKeyLen]byte
		b := append(buf[:0], "join:"...)
		for i, p := range ps {
			k, err := p(r)
			if err != nil {
				return "", fmt.Errorf("keyfunc: join part %d: %w", i, err)
			}
			if k == "" {
				return "", fmt.Errorf("%w: join part %d returned an empty key", ErrNoKey, i)
			}
			b = appendNetstring(b, k)
		}
		if len(b) > defaultMaxKeyLen {
			return hashKey(string(b)), nil
		}
		return string(b), nil
	}, nil
}

// appendNetstring appends s as a netstring: len(s), ':', s, ','.
func appendNetstring(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}
