package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fixedwindow/ratelimit/limiter"
)

// pingPolicy is the policy of Ping's probe decision: one unit a
// millisecond, so that its counter, under the store's prefix, lives for
// the expiry margin alone.
var pingPolicy = limiter.MustPolicy("ping", limiter.Rate{Limit: 1, Window: time.Millisecond})

// pingKey is the client key of Ping's probe, which no key function makes.
const pingKey = "\x00ping"

// defaultPingTimeout bounds a Ping whose context has no deadline: long
// enough for go-redis's dial attempts to fail with their own errors.
const defaultPingTimeout = 5 * time.Second

// Ping checks, before traffic, that the store can decide, and returns
// the first problem it finds, named as a decision's error would be (see
// ErrUnavailable): every server must run the store's script (a wrong address is
// "connection_refused", "no_route" or "dns", a TLS or certificate failure
// "tls", a wrong password "auth"), and one decision must pass the whole
// way through Redis, for a key of Ping's own under the store's prefix
// (an ACL user without EVALSHA or EVAL, or without the prefix's keys, is
// "permission_denied"; its counter expires within the expiry margin).
// The failure policy does not apply: WithFailOpen and WithFailLocal
// answer decisions, not Ping.
//
// Beside the error, Ping returns warnings: settings that let the store
// decide but turn against the limit, one line each, naming the server
// and what to set instead. Today that is a risky maxmemory policy (see
// RiskyMemoryPolicy: under volatile-lru a flood of fresh keys evicts
// spent clients' counters, whose budgets start again); a server that
// refuses CONFIG GET is not judged. A warning is no failure: log it, and
// start. Call Ping once after New:
//
//	warnings, err := store.Ping(ctx)
//	if err != nil {
//		log.Fatalf("rate limits: %v", err) // redisstore: ping 10.0.0.7:6379: connection refused: dial tcp ...
//	}
//	for _, w := range warnings {
//		log.Printf("rate limits: %s", w) // redisstore: 10.0.0.7:6379: maxmemory 6291456 with maxmemory-policy volatile-lru: ...
//	}
//
// A context without a deadline is given 5 s. On a Cluster every master
// is pinged, on a Ring every shard; the probe decision goes to the one
// its key belongs to. A host that refuses a script call declaring no key
// (see WithDeclaredKeys) is asked again with a key of Ping's declared,
// and the store declares every key from then on.
func (s *Store) Ping(ctx context.Context) (warnings []string, err error) {
	if s.closed.Load() {
		return nil, limiter.ErrClosed
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultPingTimeout)
		defer cancel()
	}
	if err := s.pingServers(ctx); err != nil {
		return nil, err
	}
	req := limiter.Request{Key: pingKey, Policy: pingPolicy, Now: time.Now(), Cost: 1}
	if _, err := s.batch.do(ctx, &req, 0, time.Now().Add(s.cfg.timeout), false); err != nil {
		return nil, fmt.Errorf("redisstore: ping: probe decision: %w", err)
	}
	// Every server answered: one that cannot say its settings now is
	// not judged, as one that refuses CONFIG is not.
	if risk, _ := memoryPolicyRisk(ctx, s.client); risk != "" {
		warnings = append(warnings, "redisstore: "+risk)
	}
	return warnings, nil
}

// pingServers has every server of the client run the store's script with
// no request: a round trip that needs nothing the store's ACL does not
// grant (docs/redis.md), where PING would.
func (s *Store) pingServers(ctx context.Context) error {
	ping := func(ctx context.Context, c *redis.Client) error {
		if err := s.runEmpty(ctx, c, c.Options().Addr, func() string { return s.keyOn(ctx, c) }); err != nil {
			return fmt.Errorf("redisstore: ping %s: %w", c.Options().Addr, pingErr(err))
		}
		return nil
	}
	switch c := s.client.(type) {
	case *redis.Client:
		return ping(ctx, c)
	case *redis.ClusterClient:
		if err := c.ForEachMaster(ctx, ping); err != nil {
			var r *reasonError
			if !errors.As(err, &r) { // the slot map itself could not be loaded
				err = fmt.Errorf("redisstore: ping cluster: %w", pingErr(err))
			}
			return err
		}
		return nil
	case *redis.Ring:
		return c.ForEachShard(ctx, ping)
	}
	if err := s.runEmpty(ctx, s.client, "client", func() string { return s.pingKey(0) }); err != nil {
		return fmt.Errorf("redisstore: ping: %w", pingErr(err))
	}
	return nil
}

// runEmpty runs take.lua with no request on c, named node (see take.lua's
// arguments), by EVALSHA, or EVAL when the server does not know it yet,
// declaring no key, or key(), one c serves, once the store declares
// every key. A host that refuses a call declaring no key (isRefusal,
// declared.go) is asked again declaring key(), and the store declares
// every key from then on. It runs under Redis's clock, whichever the
// store's: reading TIME is all it does (the application's clock would
// MGET no keys, an error).
func (s *Store) runEmpty(ctx context.Context, c redis.UniversalClient, node string, key func() string) error {
	if s.declared.Load() {
		return s.runScript(ctx, c, key())
	}
	err := s.runScript(ctx, c, "")
	if isRefusal(err) {
		s.declare(node, err)
		err = s.runScript(ctx, c, key())
	}
	return err
}

// runScript runs take.lua with no request on c, declaring key unless it
// is empty.
func (s *Store) runScript(ctx context.Context, c redis.UniversalClient, key string) error {
	args := []any{"evalsha", takeHash, 0, "s", 0, 0, 0, 0}
	if key != "" {
		args = []any{"evalsha", takeHash, 1, key, "s", 0, 0, 0, 0}
	}
	_, err := s.send(ctx, c, args, false)
	if isNoScript(err) {
		args[0], args[1] = "eval", takeSource
		_, err = s.send(ctx, c, args, false)
	}
	return err
}

// maxPingKeys bounds the keys keyOn tries: a master serving one slot of
// 16384 is found with 98% odds.
const maxPingKeys = 1 << 16

// keyOn returns a key of Ping's under the store's prefix that c, one of
// the client's servers, serves: any key for a server of its own, one of
// a slot c serves for a Cluster master ("" if none is found: a master
// serving no slot).
func (s *Store) keyOn(ctx context.Context, c *redis.Client) string {
	cluster, ok := s.client.(*redis.ClusterClient)
	if !ok {
		return s.pingKey(0)
	}
	for i := range maxPingKeys {
		m, err := cluster.MasterForKey(ctx, s.pingKey(i))
		if err != nil {
			return ""
		}
		if m.Options().Addr == c.Options().Addr {
			return s.pingKey(i)
		}
	}
	return ""
}

// pingKey returns the i'th key Ping may declare, under the store's
// prefix and in a hash tag of its own.
func (s *Store) pingKey(i int) string {
	return s.cfg.prefix + "{" + tag(pingKey) + strconv.Itoa(i) + "}:ping"
}

// pingErr names a failed PING: a dial's error by what failed, an error
// reply (AUTH) by its code, anything else as a decision's error is.
func pingErr(err error) error {
	if r := dialReason(err); r != "unavailable" && !errors.Is(err, context.DeadlineExceeded) {
		return &reasonError{r, fmt.Errorf("%s: %w", phraseOf(r), err)}
	}
	return named(err)
}
