package keyfunc

import (
	"fmt"

	"github.com/fixedwindow/ratelimit/internal/keyform"
)

// defaultMaxKeyLen is the longest key, in bytes, returned whole. A longer
// key is replaced by "sha256:" and the hex SHA-256 of the whole key (71
// bytes), so a client cannot make the store hold arbitrarily long keys.
const defaultMaxKeyLen = keyform.DefaultMaxLen

// minMaxKeyLen is the smallest bound WithMaxKeyLen accepts: a hashed key
// (71 bytes) must fit under it, or hashing would lengthen keys.
const minMaxKeyLen = keyform.MinMaxLen

// defaultIPv6Prefix is the prefix length that groups IPv6 clients. A /64
// is the smallest block normally assigned to one subscriber, so grouping by
// it stops a client from rotating through its own addresses.
const defaultIPv6Prefix = 64

// An Option configures a constructor of this package. An option only
// records its argument; the constructor checks them all, once, and
// reports a bad one as an error wrapping ErrInvalidOption that names it.
// A nil Option is an error, and so is an option that does not concern the
// constructor it is given to: WithIPv4Prefix and WithIPv6Prefix concern
// the address-based Funcs (RemoteHost, TrustedProxy, ResolvedAddr,
// chikey.ClientIP), WithMaxKeyLen and WithHashedValues the Funcs whose
// keys carry client-chosen text (Header, Principal).
type Option func(*config)

// The options a config was given, so that a constructor can refuse those
// that do not concern it.
const (
	setIPv4 = 1 << iota
	setIPv6
	setMaxLen
	setHashed
)

type config struct {
	v4Bits  int
	v6Bits  int
	maxLen  int
	hashAll bool
	set     int // set* bits of the options given
}

// A kind is what a constructor keys by, and so which options concern it.
type kind int

const (
	addrKind kind = iota // an address: the prefix options
	textKind             // client-chosen text: the length and hashing options
)

// newConfig applies opts for the constructor fn, of kind k, and checks the
// result: every argument in range, and no option that does not concern k.
func newConfig(fn string, k kind, opts []Option) (config, error) {
	c := config{v4Bits: 32, v6Bits: defaultIPv6Prefix, maxLen: defaultMaxKeyLen}
	for i, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: %s: option %d is nil", ErrInvalidOption, fn, i)
		}
		o(&c)
	}
	switch {
	case c.set&setIPv6 != 0 && (c.v6Bits < 16 || c.v6Bits > 128):
		return c, fmt.Errorf("%w: %s: WithIPv6Prefix(%d): prefix outside /16 to /128", ErrInvalidOption, fn, c.v6Bits)
	case c.set&setIPv4 != 0 && (c.v4Bits < 8 || c.v4Bits > 32):
		return c, fmt.Errorf("%w: %s: WithIPv4Prefix(%d): prefix outside /8 to /32", ErrInvalidOption, fn, c.v4Bits)
	case c.set&setMaxLen != 0 && c.maxLen < minMaxKeyLen:
		return c, fmt.Errorf("%w: %s: WithMaxKeyLen(%d): max key length under %d", ErrInvalidOption, fn, c.maxLen, minMaxKeyLen)
	}
	if k == textKind {
		switch {
		case c.set&setIPv4 != 0:
			return c, fmt.Errorf("%w: %s: WithIPv4Prefix(%d) does not apply: it groups addresses, and %s keys by text", ErrInvalidOption, fn, c.v4Bits, fn)
		case c.set&setIPv6 != 0:
			return c, fmt.Errorf("%w: %s: WithIPv6Prefix(%d) does not apply: it groups addresses, and %s keys by text", ErrInvalidOption, fn, c.v6Bits, fn)
		}
	} else {
		switch {
		case c.set&setMaxLen != 0:
			return c, fmt.Errorf("%w: %s: WithMaxKeyLen(%d) does not apply: it bounds client-chosen text, and an address key is at most 47 bytes", ErrInvalidOption, fn, c.maxLen)
		case c.set&setHashed != 0:
			return c, fmt.Errorf("%w: %s: WithHashedValues() does not apply: it hashes client-chosen text, and %s keys by address", ErrInvalidOption, fn, fn)
		}
	}
	return c, nil
}

// WithIPv6Prefix groups IPv6 clients by the first bits of their address
// (16 to 128; default 64). Shorter prefixes put more addresses in one
// bucket; 128 keys every address alone, which lets a client with a /64
// rotate through 2^64 buckets. It concerns the address-based Funcs only.
func WithIPv6Prefix(bits int) Option {
	return func(c *config) { c.v6Bits, c.set = bits, c.set|setIPv6 }
}

// WithIPv4Prefix groups IPv4 clients by the first bits of their address
// (8 to 32; default 32, which keys every address alone). A /24 suits
// networks where one client spreads over neighbouring addresses. It
// concerns the address-based Funcs only.
func WithIPv4Prefix(bits int) Option {
	return func(c *config) { c.v4Bits, c.set = bits, c.set|setIPv4 }
}

// WithMaxKeyLen sets the longest key returned whole (at least 71 bytes;
// default 256). Longer keys are hashed. It concerns Header and Principal,
// whose keys carry client-chosen text.
func WithMaxKeyLen(n int) Option {
	return func(c *config) { c.maxLen, c.set = n, c.set|setMaxLen }
}

// WithHashedValues hashes every key, whatever its length, so that secrets
// such as API keys never reach the store, its logs or its memory dumps in
// clear (default: only keys over WithMaxKeyLen's bound are hashed). It
// costs one SHA-256 per request, and concerns Header and Principal.
func WithHashedValues() Option {
	return func(c *config) { c.hashAll, c.set = true, c.set|setHashed }
}
