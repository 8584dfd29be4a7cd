package keyfunc

import "fmt"

// DefaultMaxKeyLen is the longest key, in bytes, returned whole. A longer
// key is replaced by "sha256:" and the hex SHA-256 of the whole key (71
// bytes), so a client cannot make the store hold arbitrarily long keys.
const DefaultMaxKeyLen = 256

// minMaxKeyLen is the smallest bound WithMaxKeyLen accepts: a hashed key
// (71 bytes) must fit under it, or hashing would lengthen keys.
const minMaxKeyLen = len(hashPrefix) + 64

// DefaultIPv6Prefix is the prefix length that groups IPv6 clients. A /64
// is the smallest block normally assigned to one subscriber, so grouping by
// it stops a client from rotating through its own addresses.
const DefaultIPv6Prefix = 64

// An Option configures a constructor of this package. Options that do not
// concern a constructor are ignored by it: WithIPv4Prefix and
// WithIPv6Prefix concern the address-based Funcs (RemoteHost,
// TrustedProxy, ResolvedAddr), WithMaxKeyLen and WithHashedValues the Funcs
// whose keys carry client-chosen text (Header, Principal). A nil Option is
// a constructor error.
type Option func(*config) error

type config struct {
	v4Bits  int
	v6Bits  int
	maxLen  int
	hashAll bool
}

func newConfig(opts []Option) (config, error) {
	c := config{v4Bits: 32, v6Bits: DefaultIPv6Prefix, maxLen: DefaultMaxKeyLen}
	for _, o := range opts {
		if o == nil {
			return c, fmt.Errorf("%w: nil Option", ErrInvalidOption)
		}
		if err := o(&c); err != nil {
			return c, err
		}
	}
	return c, nil
}

// WithIPv6Prefix groups IPv6 clients by the first bits of their address
// (16 to 128; the default is 64). Shorter prefixes put more addresses in
// one bucket; 128 keys every address alone, which lets a client with a
// /64 rotate through 2^64 buckets.
func WithIPv6Prefix(bits int) Option {
	return func(c *config) error {
		if bits < 16 || bits > 128 {
			return fmt.Errorf("%w: IPv6 prefix /%d outside /16 to /128", ErrInvalidOption, bits)
		}
		c.v6Bits = bits
		return nil
	}
}

// WithIPv4Prefix groups IPv4 clients by the first bits of their address
// (8 to 32; the default 32 keys every address alone). A /24 suits networks
// where one client spreads over neighbouring addresses.
func WithIPv4Prefix(bits int) Option {
	return func(c *config) error {
		if bits < 8 || bits > 32 {
			return fmt.Errorf("%w: IPv4 prefix /%d outside /8 to /32", ErrInvalidOption, bits)
		}
		c.v4Bits = bits
		return nil
	}
}

// WithMaxKeyLen sets the longest key returned whole (at least 71 bytes;
// the default is DefaultMaxKeyLen). Longer keys are hashed.
func WithMaxKeyLen(n int) Option {
	return func(c *config) error {
		if n < minMaxKeyLen {
			return fmt.Errorf("%w: max key length %d under %d", ErrInvalidOption, n, minMaxKeyLen)
		}
		c.maxLen = n
		return nil
	}
}

// WithHashedValues hashes every key, whatever its length, so that secrets
// such as API keys never reach the store, its logs or its memory dumps in
// clear. It costs one SHA-256 per request.
func WithHashedValues() Option {
	return func(c *config) error {
		c.hashAll = true
		return nil
	}
}
