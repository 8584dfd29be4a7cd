package keyfunc

import "github.com/fixedwindow/ratelimit/internal/keyform"

// bound returns key whole when it fits in maxLen bytes and hashAll is
// false, and its hashed form otherwise (keyform.Bound, which grpclimit
// shares).
func bound(key string, maxLen int, hashAll bool) string { return keyform.Bound(key, maxLen, hashAll) }

// hashKey returns "sha256:" and the hex SHA-256 of key.
func hashKey(key string) string { return keyform.Hash(key) }
