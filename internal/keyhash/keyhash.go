package keyhash

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"sync"
)

// MinSecret is the shortest secret New accepts, in bytes: 128 bits, the
// strength of the hash itself (a 128-bit truncated MAC), and what NIST
// SP 800-107 asks of an HMAC key for that strength. A shorter secret is
// the weaker link: it could be searched for with one known key and its
// hash (say, the service's own test client's address), and every key
// found again with it.
const MinSecret = 16

// Kind starts every hashed key, so that a key read in the store says it
// is hashed, and is apart from every clear key form (keyform's kinds and
// bare addresses).
const Kind = "hmac:"

// size is how many bytes of the MAC a key keeps: 128 bits, so that two
// of 2^32 keys share a hash with odds of about 2^-65.
const size = 16

// Len is the length of every hashed key: Kind and 128 bits in unpadded
// base64url (22 characters), whatever the key's length.
const Len = len(Kind) + (size*8+5)/6

// A Hasher hashes keys under one secret. It is safe for concurrent use.
// The zero Hasher is not usable: build one with New.
type Hasher struct {
	pool sync.Pool // of *state
}

// state is one goroutine's MAC and scratch space.
type state struct {
	mac hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// New returns a Hasher under secret, which it copies. A secret shorter
// than MinSecret is an error; fn names the option for its text.
func New(fn string, secret []byte) (*Hasher, error) {
	if len(secret) < MinSecret {
		return nil, fmt.Errorf("%s: secret is %d bytes, fewer than %d: draw it at random (crypto/rand) and keep it as the service keeps its other secrets", fn, len(secret), MinSecret)
	}
	key := append([]byte(nil), secret...)
	h := &Hasher{}
	h.pool.New = func() any { return &state{mac: hmac.New(sha256.New, key)} }
	return h, nil
}

// Key returns key's hashed form: Kind and the base64url of the first
// 128 bits of HMAC-SHA-256(secret, key), Len bytes. It holds no '{',
// '}' or '%', so a store's hash tag around it is the whole of it.
func (h *Hasher) Key(key string) string {
	st := h.pool.Get().(*state)
	st.mac.Reset()
	st.buf = append(st.buf[:0], key...)
	st.mac.Write(st.buf)
	sum := st.mac.Sum(st.sum[:0])
	var out [Len]byte
	copy(out[:], Kind)
	base64.RawURLEncoding.Encode(out[len(Kind):], sum[:size])
	if cap(st.buf) <= 1<<10 { // a huge key's buffer is not kept
		h.pool.Put(st)
	}
	return string(out[:])
}
