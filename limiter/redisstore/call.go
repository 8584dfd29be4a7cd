package redisstore

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A script call is sent by go-redis at most once. Redis may run a script
// and the reply then be lost (a connection reset, a proxy restarting); a
// client that sent it again on a new connection would charge the decision
// (under Batch, a whole batch) twice. go-redis retries commands after
// network errors (MaxRetries, 3 by default; a Cluster client within
// MaxRedirects) except those whose NoRetry reports true: the client's
// process loop, its pipelines and the Cluster client all check it. So
// every script call is one of the two command types below, and the
// client's retries stay on for everything else it sends.
// A Cluster client still follows MOVED and ASK for them: a redirected
// script ran nowhere.

// scriptCmd is a script call whose reply go-redis parses, so that a
// Cluster client sees MOVED and ASK and follows them.
type scriptCmd struct{ *redis.Cmd }

// NoRetry keeps go-redis from sending the script again.
func (scriptCmd) NoRetry() bool { return true }

// rawScriptCmd is a script call whose reply is kept as raw RESP, read by
// parseReply without an interface value per element (Batch, on a client
// that sends everything to one server: no redirects to follow).
type rawScriptCmd struct{ *redis.RawCmd }

// NoRetry keeps go-redis from sending the script again.
func (rawScriptCmd) NoRetry() bool { return true }

// onceCmd is a command sent at most once that is no script: a Reset's
// DEL, which, sent again after its reply was lost, would forget what was
// charged between its two runs; WithReplicaAcks' barrier and WAIT, in the
// pipeline of the calls they follow.
type onceCmd struct{ redis.Cmder }

// NoRetry keeps go-redis from sending the command again.
func (onceCmd) NoRetry() bool { return true }

// serverError is an error reply from Redis, read from raw RESP. It
// satisfies redis.Error, as go-redis's own error replies do.
type serverError string

func (e serverError) Error() string { return string(e) }

// RedisError marks serverError as a reply from the server.
func (serverError) RedisError() {}

// send sends cmd once, through p; raw asks for the reply as RESP bytes.
func (s *Store) send(ctx context.Context, p redis.UniversalClient, cmd []any, raw bool) (replyReader, error) {
	s.stats.roundTrips.Add(1)
	if raw {
		c := rawScriptCmd{redis.NewRawCmd(ctx, cmd...)}
		_ = p.Process(ctx, c)
		b, err := c.Result()
		if err == nil && len(b) > 0 && b[0] == '-' {
			err = serverError(strings.TrimRight(string(b[1:]), "\r\n"))
		}
		return replyReader{raw: b}, err
	}
	c := scriptCmd{redis.NewCmd(ctx, cmd...)}
	_ = p.Process(ctx, c)
	v, err := c.Result()
	return replyReader{parsed: v, isParsed: true}, err
}

// scriptCommand returns cmd with "evalsha", the script's hash, the
// number of keys and the keys appended.
func scriptCommand(cmd []any, hash string, keys []string) []any {
	cmd = append(cmd, "evalsha", hash, len(keys))
	for _, k := range keys {
		cmd = append(cmd, k)
	}
	return cmd
}

// isNoScript tells the server's answer that it does not know the script.
func isNoScript(err error) bool { return hasServerPrefix(err, "NOSCRIPT") }

// isTryAgain tells a Cluster's answer that a multi-key script found some
// of its keys moved and others not yet, mid-migration: it ran nowhere and
// may be sent again. go-redis would retry it only for a retryable command.
func isTryAgain(err error) bool { return hasServerPrefix(err, "TRYAGAIN") }

func hasServerPrefix(err error, prefix string) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), prefix)
}
