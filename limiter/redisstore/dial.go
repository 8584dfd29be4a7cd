package redisstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Redis that refuses connections, a name that does not resolve or a TLS
// handshake that fails shows in a script call as a timeout: go-redis
// dials again with backoff (five attempts by default) until the
// decision's 100 ms are spent, and the call returns "context deadline
// exceeded". The cause is in the dials. So every server's client gets a
// dial hook that keeps the last failed dial; a call that timed out after
// a dial failed during it is named for that failure instead.

// A dialFailure is the last dial of a server's client that failed.
type dialFailure struct {
	err error
	at  int64 // Unix ns
}

// dialWatch is the hook: it notes failed dials in d, and forgets them
// when a dial succeeds. It does nothing else to the client's commands.
type dialWatch struct{ d *dest }

var _ redis.Hook = dialWatch{}

func (w dialWatch) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		switch {
		case err != nil && ctx.Err() == nil:
			w.d.dialErr.Store(&dialFailure{err: err, at: time.Now().UnixNano()})
		case err == nil && w.d.dialErr.Load() != nil:
			w.d.dialErr.Store(nil)
		}
		return c, err
	}
}

func (dialWatch) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (dialWatch) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// watchDials adds the dial hook to c, one server's client, for d. The
// hook stays on the client, which the caller owns, after Close: it only
// stores the last failed dial.
func watchDials(c *redis.Client, d *dest) { c.AddHook(dialWatch{d}) }

// dialCause returns the failure of a dial to d made since start (Unix
// ns), or nil.
func (d *dest) dialCause(start int64) error {
	if f := d.dialErr.Load(); f != nil && f.at >= start {
		return f.err
	}
	return nil
}

// causeOf names a timeout by the dial that failed while it ran, if any:
// "connection refused: dial tcp 127.0.0.1:6379: connect: connection
// refused (no connection within the timeout)"; else by the server that
// did not answer, where the call went to one ("context deadline exceeded
// (no answer from 127.0.0.1:6379)"), so that whoever reads it knows
// which node to look at.
func causeOf(err error, d *dest, start int64) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	dial := d.dialCause(start)
	if dial == nil {
		if d.one && d.name != "" && !strings.Contains(err.Error(), d.name) {
			return fmt.Errorf("%w (no answer from %s)", err, d.name)
		}
		return err
	}
	// The deadline, not err: err may hold the same dial error again
	// (go-redis returns the last one when the time runs out mid-backoff).
	reason := dialReason(dial)
	return &reasonError{reason, fmt.Errorf("%s: %w (no connection within the timeout: %w)", phraseOf(reason), dial, context.DeadlineExceeded)}
}

// phraseOf returns a reason as words: "connection refused", "tls
// handshake".
func phraseOf(reason string) string {
	switch reason {
	case "tls":
		return "tls handshake"
	case "dns":
		return "dns lookup"
	}
	return strings.ReplaceAll(reason, "_", " ")
}

// dialReason names why a dial failed: connection_refused, no_route, dns,
// tls, auth (a handshake refused by Redis), connect_timeout, or
// unavailable.
func dialReason(err error) string {
	var (
		dns  *net.DNSError
		cert *tls.CertificateVerificationError
		hn   x509.HostnameError
		ua   x509.UnknownAuthorityError
		ci   x509.CertificateInvalidError
		rh   tls.RecordHeaderError
		al   tls.AlertError
		re   redis.Error
		op   *net.OpError
	)
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no_route"
	case errors.As(err, &dns):
		return "dns"
	case errors.As(err, &cert), errors.As(err, &hn), errors.As(err, &ua), errors.As(err, &ci),
		errors.As(err, &rh), errors.As(err, &al), strings.Contains(err.Error(), "tls: "):
		return "tls"
	case errors.As(err, &re) && isAuthReply(re.Error()):
		return "auth"
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return "connect_timeout"
	}
	return "unavailable"
}

// isAuthReply reports the error replies of a refused authentication.
func isAuthReply(msg string) bool {
	return strings.HasPrefix(msg, "WRONGPASS") || strings.HasPrefix(msg, "NOAUTH")
}
