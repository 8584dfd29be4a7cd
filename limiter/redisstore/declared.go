package redisstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Calls that declare every key. A round's call to one server carries the
// decisions of many client keys: on a single node (or a Ring shard) with
// every key declared, across slots; on a Cluster master as a node call,
// which declares none (round.go). Open-source Redis runs both. Other
// hosts refuse them before running them:
//
//   - DragonflyDB refuses a script's undeclared keys by default ("script
//     tried accessing undeclared key"): every node call of its Cluster
//     mode.
//   - A proxy that routes a script by its first declared key (Envoy's
//     Redis proxy, twemproxy, managed services' proxies) cannot route a
//     call that declares none; one that answers for it says so ("wrong
//     number of arguments", "no key"), and a Cluster behind one answers
//     CROSSSLOT to a call whose keys span slots.
//
// Such a refusal (isRefusal) of a call that declared no key or the keys
// of many client keys makes the store declare every key (declare): each
// call then holds the decisions of one client key, whose keys share a
// hash tag and so a slot (and a shard behind any proxy that hashes the
// tag), as the calls that resend decisions found off their master
// already do, through the same server's breaker. The refused call's
// requests are sent again that way in the same round: a refusal comes
// before the script runs (take.lua, inflight.lua and settle.lua touch no
// key before a node call's first probe, which ends the call with the
// host's error when it names undeclared keys), so nothing was charged.
// WithDeclaredKeys starts the store that way, and a Cluster client that
// reads from replicas always is (readsReplicas).
//
// A proxy that routes a call declaring no key by its first argument
// instead (Envoy's does) sends a node call to some master that then
// finds each request elsewhere: correct, at twice the calls, and no
// refusal to detect. Such hosts need WithDeclaredKeys (docs/redis.md).

// refusalPhrases are found, lower-cased, in the error replies of hosts
// that refuse a script call for the keys it declares before running it.
var refusalPhrases = []string{
	"undeclared",                // DragonflyDB
	"wrong number of arguments", // a proxy that needs a key to route by
	"no key",
	"non local key", // Redis's own words for an undeclared key off the node
	"crossslot",     // a Cluster behind a proxy that routed a call across slots
	"cross-slot",
}

// isRefusal reports whether err, the error of a script call, is a
// host's refusal of the keys the call declared (see refusalPhrases).
func isRefusal(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	for _, p := range refusalPhrases {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// declare makes every later call declare its keys, one client key per
// call, after node refused a call that did not (err); the observer hears
// of it once.
func (s *Store) declare(node string, err error) {
	if s.declared.CompareAndSwap(false, true) && s.cfg.observer != nil {
		s.cfg.observer(Event{Kind: KeysDeclared, Node: node,
			Err: fmt.Errorf("redisstore: %s refused a script call for its keys; every call now declares its keys, one client key per call: %w", node, err)})
	}
}

// readsReplicas reports whether client is a Cluster client that reads
// from replicas (ReadOnly, RouteByLatency, RouteRandomly). It opens every
// connection with READONLY, on which a master demoted by a failover the
// slot map has not caught up with would answer a node call's probe as a
// replica instead of redirecting it: it sends calls per key only, each
// with its keys declared, which go-redis routes.
func readsReplicas(client redis.UniversalClient) bool {
	c, ok := client.(*redis.ClusterClient)
	if !ok {
		return false
	}
	o := c.Options()
	return o.ReadOnly || o.RouteByLatency || o.RouteRandomly
}
