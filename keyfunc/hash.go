package keyfunc

import (
	"crypto/sha256"
	"encoding/hex"
)

// hashPrefix marks a hashed key. No other key of this package starts with
// it, so a hashed key never collides with a key kept whole.
const hashPrefix = "sha256:"

// bound returns key whole when it fits in maxLen bytes and hashAll is
// false, and its hashed form otherwise.
func bound(key string, maxLen int, hashAll bool) string {
	if len(key) <= maxLen && !hashAll {
		return key
	}
	return hashKey(key)
}

// hashKey returns "sha256:" and the hex SHA-256 of key.
func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	var b [len(hashPrefix) + 2*sha256.Size]byte
	copy(b[:], hashPrefix)
	hex.Encode(b[len(hashPrefix):], sum[:])
	return string(b[:])
}
