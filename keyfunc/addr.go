package keyfunc

import (
	"net/netip"

	"github.com/fixedwindow/ratelimit/internal/addrkey"
)

// normalize folds an IPv4-mapped address to IPv4 and drops any zone: see
// addrkey.Normalize, which grpclimit.PeerHost shares, so that a client
// has one key over HTTP and gRPC.
func normalize(a netip.Addr) netip.Addr { return addrkey.Normalize(a) }

// addrKey returns the key of a normalized address, grouped by c's
// prefixes: see addrkey.Key. It allocates once.
func (c *config) addrKey(a netip.Addr) string { return addrkey.Key(a, c.v4Bits, c.v6Bits) }
