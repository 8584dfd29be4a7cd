package redisstore

import "github.com/redis/go-redis/v9"

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
