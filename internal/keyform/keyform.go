package keyform

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
)

// The kinds of key, the prefixes that keep them apart.
const (
	HeaderKind    = "hdr:"    // a request header or gRPC metadata value: "hdr:X-Api-Key:k-123"
	PrincipalKind = "user:"   // an authenticated principal: "user:42"
	JoinKind      = "join:"   // parts joined as netstrings: "join:3:a:b,1:c,"
	HashKind      = "sha256:" // a key too long to keep whole, hashed
)

// DefaultMaxLen is the longest key, in bytes, kept whole unless told
// otherwise. A longer key is hashed (71 bytes), so a client cannot make
// the store hold arbitrarily long keys.
const DefaultMaxLen = 256

// MinMaxLen is the smallest bound that makes sense: a hashed key must fit
// under it, or hashing would lengthen keys.
const MinMaxLen = len(HashKind) + 2*sha256.Size

// Bound returns key whole when it fits in maxLen bytes and hashAll is
// false, and its hashed form otherwise.
func Bound(key string, maxLen int, hashAll bool) string {
	if len(key) <= maxLen && !hashAll {
		return key
	}
	return Hash(key)
}

// Hash returns "sha256:" and the hex SHA-256 of key.
func Hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	var b [len(HashKind) + 2*sha256.Size]byte
	copy(b[:], HashKind)
	hex.Encode(b[len(HashKind):], sum[:])
	return string(b[:])
}

// Rules are one package's errors for First and Join: the prefix of its
// error text ("keyfunc") and the sentinels its errors wrap, NoKey for a
// request without a usable key and Misconfigured for a key function that
// cannot work where it is installed.
type Rules struct {
	Prefix        string
	NoKey         error
	Misconfigured error
}

// First returns the key of the first of n alternatives that resolves;
// alt(i) asks alternative i. An alternative whose error wraps NoKey (or
// that returns "") is passed over. Any other error stops First and is
// returned, wrapped: a principal lookup that broke should not quietly
// downgrade a user to an address. So does an error wrapping
// Misconfigured. When no alternative resolves, the error is the last
// alternative's, wrapped, and so still matches NoKey. alt does not
// escape: a closure over the request costs no allocation.
func (r *Rules) First(n int, alt func(i int) (string, error)) (string, error) {
	var last error
	for i := range n {
		k, err := alt(i)
		switch {
		case err == nil && k != "":
			return k, nil
		case err == nil:
			err = fmt.Errorf("%w: alternative %d returned an empty key", r.NoKey, i)
		case !errors.Is(err, r.NoKey), errors.Is(err, r.Misconfigured):
			return "", fmt.Errorf("%s: first alternative %d: %w", r.Prefix, i, err)
		}
		last = err
	}
	return "", fmt.Errorf("%s: none of %d alternatives resolved; the last: %w", r.Prefix, n, last)
}

// Join returns the key that combines the keys of n parts, in order; part(i)
// resolves part i. Each part is written as a netstring (its length in
// decimal, ':', the part, ','), after "join:": ("a:b", "c") gives
// "join:3:a:b,1:c," and ("a", "b:c") gives "join:1:a,3:b:c,", so no two
// lists of parts give the same key. A joined key longer than
// DefaultMaxLen is hashed. There is no key when any part has none: the
// error of the first failing part is returned, wrapped, and still matches
// NoKey. part does not escape.
func (r *Rules) Join(n int, part func(i int) (string, error)) (string, error) {
	var buf [DefaultMaxLen]byte
	b := append(buf[:0], JoinKind...)
	for i := range n {
		k, err := part(i)
		if err != nil {
			return "", fmt.Errorf("%s: join part %d: %w", r.Prefix, i, err)
		}
		if k == "" {
			return "", fmt.Errorf("%w: join part %d returned an empty key", r.NoKey, i)
		}
		b = appendNetstring(b, k)
	}
	if len(b) > DefaultMaxLen {
		return Hash(string(b)), nil
	}
	return string(b), nil
}

// appendNetstring appends s as a netstring: len(s), ':', s, ','.
func appendNetstring(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, ',')
}
