// Package keyform holds the rules a rate-limit key follows whatever built
// it, shared by keyfunc (HTTP) and grpclimit (gRPC) so that a client
// keyed alike through either door has the same key and so one budget:
//
//   - every key starts with its kind ("hdr:", "user:", "join:",
//     "sha256:") or is a bare IPv4 address (see internal/addrkey), so
//     keys of two kinds never collide;
//   - a key longer than its bound (256 bytes by default) is replaced by
//     "sha256:" and the hex SHA-256 of the whole key (Bound, Hash);
//   - a joined key writes each part as a netstring after "join:" (Join);
//   - First passes over alternatives that find no key and stops at any
//     other error (First).
//
// The errors are the caller's: Rules carries the package prefix and the
// sentinels its errors wrap.
package keyform
