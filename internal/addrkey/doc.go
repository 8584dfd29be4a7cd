// Package addrkey turns a client's IP address into its rate-limit key,
// for every door a request comes through: keyfunc's address-based Funcs
// (HTTP) and grpclimit.PeerHost (gRPC) both key by it, so one client has
// one key, and so one budget, whichever way it comes in.
//
// An address is first normalized (an IPv4-mapped IPv6 address folds to
// IPv4, a zone is dropped), then keyed: "203.0.113.7" for IPv4,
// "ip6:2001:db8:1:2::/64" for IPv6 grouped by its /64, and an IPv6
// address that only carries an IPv4 client (NAT64, IPv4-compatible) by
// that client.
//
//	a := addrkey.Normalize(peer.Addr())
//	key := addrkey.Key(a, 32, 64) // "203.0.113.7"
package addrkey
